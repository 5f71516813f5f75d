"""``manage.py baton <verb> [<object>] ...``: every administration command under one name
(brokers/management/verbs.py lists the verbs)."""

from __future__ import annotations

import argparse

from django.core.management import call_command, get_commands, load_command_class
from django.core.management.base import BaseCommand, CommandError

from ..verbs import verb_resolve, verbs_text


def _resolved(words: list[str]) -> tuple[str, list[str]]:
    found = verb_resolve(words)
    if found is None:
        raise CommandError(f"unknown verb {' '.join(words[:2])!r}; `manage.py baton help` lists them")
    return found


class Command(BaseCommand):
    help = "Administration under one name: manage.py baton <verb> [<object>] ... (`manage.py baton help`)."

    def add_arguments(self, parser):
        parser.add_argument("words", nargs=argparse.REMAINDER, help="verb, object and the command's arguments")

    def run_from_argv(self, argv: list[str]) -> None:
        """The command a verb names parses the rest of the line itself (its --help included)."""
        words = argv[2:]
        if not words or words[0] in ("help", "-h", "--help"):
            self.stdout.write(verbs_text())
            return
        try:
            name, rest = _resolved(words)
        except CommandError as exc:
            self.stderr.write(f"CommandError: {exc}")
            raise SystemExit(exc.returncode) from None
        load_command_class(get_commands()[name], name).run_from_argv([argv[0], name, *rest])

    def handle(self, *args, **options) -> None:
        """``call_command("baton", "define", "queue", ...)``."""
        words = list(options.get("words") or args)
        if not words or words[0] == "help":
            self.stdout.write(verbs_text())
            return
        name, rest = _resolved(words)
        call_command(name, *rest, stdout=self.stdout._out, stderr=self.stderr._out)

from argparse import ArgumentTypeError

from django.core.management.base import BaseCommand, CommandError

from transactions.journal_export import journal_export


def _count(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise ArgumentTypeError(f"{value!r} is not a whole number") from None
    if number < 0:
        raise ArgumentTypeError(f"{value!r} is negative")
    return number


class Command(BaseCommand):
    help = (
        "Write the journal events after an id to PATH as JSON Lines (atomically), for the Spark "
        "analytics jobs. Prints how many were written and the last id (the next --after-id)."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", help="File to write; replaced whole if it exists.")
        parser.add_argument(
            "--after-id", type=_count, default=0, help="Export the events with a larger id (default 0: all of them)."
        )
        parser.add_argument(
            "--limit",
            type=_count,
            default=None,
            help="Export at most this many journal rows (a row of several messages: a line each).",
        )

    def handle(self, *args, path, after_id, limit, **options):
        try:
            summary = journal_export(path=path, after_id=after_id, limit=limit)
        except OSError as exc:
            raise CommandError(f"Cannot write {path}: {exc}") from exc
        self.stdout.write(
            f"Exported {summary['events']} journal events to {summary['path']}; last id {summary['last_id']}."
        )

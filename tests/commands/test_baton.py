"""``manage.py baton <verb> [<object>] ...``: one name for every administration command,
which runs the command the verb names with the rest of the line; the commands' own names
stay as aliases."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import get_commands
from django.core.management.base import CommandError

from brokers.management.verbs import VERBS, verb_resolve

from .conftest import run

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.once
def test_every_verb_runs_a_command_that_exists():
    commands = get_commands()
    assert [command for command, _ in VERBS.values() if command not in commands] == []


@pytest.mark.once
@pytest.mark.parametrize(
    "words, expected",
    [
        (["define", "queue", "B", "Q", "--max-depth", "5"], ("define_queue", ["B", "Q", "--max-depth", "5"])),
        (["DISPLAY", "Queue", "B", "*"], ("display_queue", ["B", "*"])),
        (["put", "B", "Q", "hello"], ("put", ["B", "Q", "hello"])),
        (["get", "queue"], ("get", ["queue"])),  # a queue may be named like an object
        (["token", "admin"], ("api_token", ["admin"])),
        (["run", "channel", "C"], ("channel_run", ["C"])),
        (["frob"], None),
        ([], None),
    ],
)
def test_the_verb_names_the_command(words, expected):
    assert verb_resolve(words) == expected


def test_a_verb_does_what_its_command_does(db):
    run("baton", "define", "broker", "QM9")
    run("baton", "define", "queue", "QM9", "Q1", "--max-depth", "3")
    shown = json.loads(run("baton", "display", "queue", "QM9", "Q1", "--json").out)
    assert shown[0]["name"] == "Q1" and shown[0]["max_depth"] == 3
    assert json.loads(run("display_queue", "QM9", "Q1", "--json").out) == shown  # the alias


def test_an_unknown_verb_is_a_command_error(db):
    with pytest.raises(CommandError, match="unknown verb"):
        run("baton", "frob", "x")


@pytest.mark.once
def test_from_the_shell_help_lists_the_verbs_and_an_unknown_one_fails():
    env = {**os.environ, "DATABASE_URL": "sqlite:///:memory:"}
    shown = subprocess.run(
        [sys.executable, "manage.py", "baton", "help"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert shown.returncode == 0 and "define queue" in shown.stdout and "define_queue" in shown.stdout
    sub_help = subprocess.run(
        [sys.executable, "manage.py", "baton", "define", "queue", "--help"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert sub_help.returncode == 0 and "--max-depth" in sub_help.stdout
    wrong = subprocess.run(
        [sys.executable, "manage.py", "baton", "frob"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert wrong.returncode == 1 and "unknown verb" in wrong.stderr


def _positionals(parser) -> list[str]:
    return [a.dest for a in parser._actions if not a.option_strings and a.dest != "help"]


@pytest.mark.once
def test_the_two_baton_commands_agree_on_their_shared_verbs():
    """The client's console script and manage.py baton take the same positional arguments
    for the verbs both have, accept --json where both print JSON, and each help names the other."""
    from django.core.management import load_command_class

    from baton_client.cli import SHARED_VERBS, parser_make
    from brokers.management.verbs import verbs_text

    client = parser_make()
    sub = next(a for a in client._actions if isinstance(a, argparse._SubParsersAction)).choices
    for verb, server_verb in (("put", "put"), ("get", "get"), ("browse", "browse"), ("publish", "publish")):
        command, _ = verb_resolve([server_verb])
        app = get_commands()[command]
        server = load_command_class(app, command).create_parser("manage.py", command)
        assert _positionals(sub[verb]) == _positionals(server), verb
    assert set(SHARED_VERBS) <= set(sub)
    for obj in ("broker", "queue"):
        command, _ = verb_resolve(["display", obj])
        server = load_command_class(get_commands()[command], command).create_parser("manage.py", command)
        assert "--json" in server._option_string_actions and "--json" in sub["display"]._option_string_actions
    assert "manage.py baton" in client.format_help() and "client's `baton`" in verbs_text()


def test_publish_reads_its_body_from_stdin_as_put_does(db):
    import io

    from django.core.management import call_command

    from brokers.services.brokers import broker_define

    broker_define(name="PB")
    out = io.StringIO()
    call_command("publish", "PB", "prices/eu", stdin=io.StringIO("from stdin"), retain=True, stdout=out)
    from pubsub.selectors import retained_all

    assert [bytes(r.body) for r in retained_all(broker="PB")] == [b"from stdin"]

"""``manage.py baton <verb> [<object>] ...``: one name for every administration command,
which runs the command the verb names with the rest of the line; the commands' own names
stay as aliases."""

from __future__ import annotations

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

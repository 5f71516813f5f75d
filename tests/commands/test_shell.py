"""The commands as an administrator uses them: real processes on a database of their own,
with stdin piped in and exit codes checked."""

from __future__ import annotations

import base64
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.once  # once: the commands run on a SQLite file of their own whatever the pass

ROOT = Path(__file__).resolve().parents[2]
MSG_ID = re.compile(r"^[0-9a-f]{48}$")


@pytest.fixture(scope="module")
def shell(tmp_path_factory):
    """Run ``manage.py ARGS`` (or a shell line) against a freshly migrated SQLite file."""
    db_file = tmp_path_factory.mktemp("shell") / "baton.sqlite3"
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{db_file}"}
    manage = f"{shlex.quote(sys.executable)} manage.py"

    def run(*args: str, input: bytes | None = None, line: str | None = None) -> subprocess.CompletedProcess:
        command = line.replace("MANAGE", manage) if line else [sys.executable, "manage.py", *args]
        return subprocess.run(
            command,
            cwd=ROOT,
            env=env,
            input=input,
            capture_output=True,
            timeout=120,
            shell=line is not None,
            check=False,
        )

    migrated = run("migrate", "-v0")
    assert migrated.returncode == 0, migrated.stderr.decode()[-3000:]
    return run


def test_put_get_from_the_shell(shell):
    ok = shell(line="MANAGE define_broker QM1 && MANAGE define_queue QM1 Q1 --max-depth 2")
    assert ok.returncode == 0, ok.stderr.decode()
    assert ok.stdout.decode().splitlines() == [
        "Broker 'QM1' defined, dead-letter queue 'SYSTEM.DEAD.LETTER.QUEUE'.",
        "Queue 'Q1' (local) defined on broker 'QM1'.",
    ]

    # Bytes on stdin are the body, as they are.
    raw = b"\x00\xffbinary\n"
    put = shell("put", "QM1", "Q1", input=raw)
    assert put.returncode == 0, put.stderr.decode()
    assert MSG_ID.match(put.stdout.decode().strip())

    piped = shell(line="printf 'from a pipe' | MANAGE put QM1 Q1 -")
    assert piped.returncode == 0 and MSG_ID.match(piped.stdout.decode().strip())

    # An error: one line on stderr, exit code 1, nothing put.
    full = shell("put", "QM1", "Q1", "one too many")
    assert full.returncode == 1 and full.stdout == b""
    assert full.stderr.decode().splitlines() == ["CommandError: Queue 'Q1' is full (max depth 2). [queue_full]"]

    [q1] = json.loads(shell("display_queue", "QM1", "Q1", "--json").stdout)
    assert (q1["depth"], q1["uncommitted_puts"]) == (2, 0)

    got = shell("get", "QM1", "Q1", "--base64")
    assert got.returncode == 0 and base64.b64decode(got.stdout.strip()) == raw
    got = shell("get", "QM1", "Q1")
    assert (got.returncode, got.stdout) == (0, b"from a pipe\n")

    # Empty: exit code 1, the reason alone on stderr; an error: exit code 2.
    empty = shell("get", "QM1", "Q1")
    assert (empty.returncode, empty.stdout) == (1, b"")
    assert empty.stderr.decode() == "No message available on queue 'Q1' on broker 'QM1'. [empty]\n"
    missing = shell("get", "QM1", "NOPE")
    assert missing.returncode == 2
    assert missing.stderr.decode() == "CommandError: No queue 'NOPE' on broker 'QM1'. [not_found]\n"

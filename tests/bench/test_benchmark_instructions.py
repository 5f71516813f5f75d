"""`python -m bench.instructions` counts a scenario's instructions under Valgrind and prints
what one call costs. Only the shape of the output is checked, and that a call costs
something: never a figure (platform/test installs Valgrind)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent

pytestmark = pytest.mark.once  # its own scratch database, on SQLite


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "bench.instructions", *args],
        check=False,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="needs Valgrind (platform/test installs it)")
def test_it_prints_the_instructions_of_one_call_as_json():
    # one scenario: each counted interpreter takes 35-50 s under Valgrind here
    done = run("--scenarios", "put", "--calls", "2,5", "--json")
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert [line["scenario"] for line in lines] == ["put"]
    for line in lines:
        assert line["calls"] == [2, 5]
        fewer, more = line["instructions"]
        assert 0 < fewer < more  # three calls more cost more
        assert line["per_call"] == round((more - fewer) / 3)


def test_unknown_scenarios_and_bad_call_counts_are_refused():
    done = run("--scenarios", "put,teleport")
    assert done.returncode == 2 and "unknown scenarios teleport" in done.stderr
    done = run("--calls", "600,100")
    assert done.returncode == 2 and "0 < smaller < larger" in done.stderr
    done = run("--scenarios", "get-100-unit", "--calls", "10,40")
    assert done.returncode == 2 and "at most 3000 messages" in done.stderr

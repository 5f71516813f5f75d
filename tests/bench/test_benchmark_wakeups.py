"""`python manage.py benchmark_wakeups` runs end to end on a scratch SQLite database and
prints its table and its JSON. Only the shape of the output is checked: never a timing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.wakeups import percentile, summary, table

ROOT = Path(__file__).resolve().parent.parent.parent


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", "benchmark_wakeups", *args],
        check=False,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_percentiles_are_nearest_rank():
    values = [float(v) for v in range(1, 101)]
    assert (percentile(values, 50), percentile(values, 99), percentile(values, 100)) == (50.0, 99.0, 100.0)
    assert percentile([3.0], 99) == 3.0
    result = summary(scenario="sqlite", bus="sockets", latencies_ms=values, heard_ms=[], timeouts=0)
    assert (result.p50_ms, result.p99_ms, result.max_ms, result.heard_p50_ms) == (50.0, 99.0, 100.0, None)
    assert "sockets" in table([result])


def test_benchmark_wakeups_on_sqlite_prints_a_table_and_json(settings):
    if "sqlite" not in settings.DATABASES["default"]["ENGINE"]:
        pytest.skip("the command makes its own SQLite database: once, in the SQLite pass, is enough")
    proc = run("--only", "sqlite", "--messages", "4")
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [line.split() for line in proc.stdout.splitlines() if line.startswith("sqlite")]
    assert [(r[0], r[1], r[2], r[-1]) for r in rows] == [("sqlite", "sockets", "4", "0")]

    proc = run("--only", "sqlite-poll", "--messages", "3", "--json")
    assert proc.returncode == 0, proc.stderr[-3000:]
    facts, result = [json.loads(line) for line in proc.stdout.splitlines()]
    assert facts["kind"] == "facts" and facts["error"] is None
    assert result["kind"] == "result" and result["bus"] == "poll" and result["messages"] == 3
    assert result["timeouts"] == 0 and result["p50_ms"] <= result["p99_ms"] <= result["max_ms"]

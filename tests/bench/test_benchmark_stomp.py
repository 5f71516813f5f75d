"""`manage.py benchmark_stomp` races stomp.py through Baton's STOMP server (and RabbitMQ's,
when asked) and runs the same load through Baton's engine alone, in process. Only what the
report holds is checked: never a timing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent

pytestmark = pytest.mark.once  # the command makes its own SQLite database whatever the suite's


def benchmark_stomp(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "BATON_TEST_DATABASE")}
    return subprocess.run(
        [sys.executable, "manage.py", "benchmark_stomp", *args],
        check=False,
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_stomp_race_and_the_engine_alone_report_every_scenario():
    proc = benchmark_stomp("--no-rabbitmq", "--messages", "100", "--rounds", "3", "--json")
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    rows = {(r["peer"], r["scenario"]): r for r in report["results"]}
    assert len(rows) == len(report["results"])  # one row per peer and scenario: the rounds' median
    assert set(rows) == {
        (peer, scenario) for peer in ("Baton", "engine") for scenario in ("send+receipt", "transaction/100")
    }
    assert all(r["messages"] == 100 and r["seconds"] > 0 and r["rate"] > 0 for r in rows.values())
    for r in rows.values():
        assert len(r["rounds"]) == 3
        assert sorted(r["rounds"])[1] == r["rate"]
    assert report["rounds"].startswith("3:")
    assert report["rabbitmq"] == "not measured: --no-rabbitmq"
    assert "in one process" in report["engine"]


def test_rounds_below_one_are_refused():
    proc = benchmark_stomp("--no-rabbitmq", "--rounds", "0")
    assert proc.returncode != 0
    assert "--rounds must be 1 or more" in proc.stderr


def test_the_engine_phase_runs_only_as_the_benchmarks_own_child():
    proc = benchmark_stomp("--phase", "engine", "--result-file", os.devnull)
    assert proc.returncode != 0
    assert "internal" in proc.stderr

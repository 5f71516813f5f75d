"""`python manage.py benchmark_workflows` runs end to end on its own scratch database (its
step workers through a server) and prints its figures (JSON, or a table made from the same results). Only the shape is
checked: never a timing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.management.commands.benchmark_workflows import table

# the benchmark makes its own database, whatever the suite's: once, in the SQLite pass
pytestmark = pytest.mark.once

ROOT = Path(__file__).resolve().parent.parent.parent


def test_json_figures_and_the_table():
    done = subprocess.run(
        [sys.executable, "manage.py", "benchmark_workflows"]
        + ["--instances", "3", "--rounds", "1", "--repeat", "1", "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert {"command", "database", "machine", "load_before", "load_after", "elapsed_s"} <= set(report["facts"])
    results = report["results"]
    assert results["batch"] == 8 and results["callers"] == 8
    for kind, name in (("closed_loop", "closed loop"), ("saturated", "saturated")):
        rows = results[kind]
        assert [r["scenario"] for r in rows] == [
            f"{name}, normal gets, 1 ms of work per step",
            f"{name}, pre-emptive gets, 1 ms of work per step",
            f"{name}, normal gets, 5 ms of work per step",
            f"{name}, pre-emptive gets, 5 ms of work per step",
        ]
        for row in rows:
            assert row["instances"] == 3 and row["instances_per_s"] > 0 and 0 < row["unit_p50_ms"] <= row["unit_p99_ms"]
            assert row["server_cpu_ms_per_step"] > 0 and row["client_cpu_ms_per_step"] > 0 and row["rounds"] == 1
            assert 1 <= row["requests_per_unit"] <= 8
        assert [("ratio_to_normal" in r) for r in rows] == [False, True, False, True]
    for row in results["closed_loop"]:
        assert 0 < row["instance_p50_ms"] <= row["instance_p99_ms"] and row["callers"] == 8
    for row in results["saturated"]:
        assert row["server_cpu_ms_per_start"] >= 0
    aborts = results["compensation"]
    assert aborts["rounds"] == 1 and 0 < aborts["p50_ms"] <= aborts["p99_ms"] <= aborts["max_ms"]

    text = table(report["facts"], report["results"]).splitlines()
    assert text[0].startswith("command: manage.py benchmark_workflows --instances 3 --rounds 1 --repeat 1")
    assert text.index(next(t for t in text if t.startswith("Closed loop:"))) < text.index(
        next(t for t in text if t.startswith("Saturated:"))
    )
    assert any(line.startswith("closed loop, pre-emptive gets, 5 ms of work per step") and "x" in line for line in text)
    assert text[-1].startswith("abort to compensated, 4 committed steps: p50 ") and text[-1].endswith("over 1 aborts")

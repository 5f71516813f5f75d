"""`python manage.py benchmark_pubsub` runs end to end on its own scratch database and
prints its figures (a table, or JSON). Only the shape is checked: never a timing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

# the benchmark makes its own databases, whatever the suite's: once, in the SQLite pass
pytestmark = pytest.mark.once

ROOT = Path(__file__).resolve().parent.parent.parent
SMALL = ["--publications", "5", "--subscriptions", "200", "--matching", "4"]


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", "benchmark_pubsub", *args], cwd=ROOT, capture_output=True, text=True, timeout=600
    )


def test_json_figures():
    done = run("--json", *SMALL)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert {"command", "database", "machine", "load_before", "load_after", "elapsed_s"} <= set(report["facts"])
    assert [r["scenario"] for r in report["results"]["publish"]] == [
        "4 subscriptions, all matching",
        "200 subscriptions, 4 matching",
    ]
    for row in report["results"]["publish"]:
        assert row["publications_per_s"] > 0 and row["copies_per_s"] == pytest.approx(row["publications_per_s"] * 4)
    assert len(report["results"]["matching"]) == 2


def test_table():
    done = run(*SMALL)
    assert done.returncode == 0, done.stderr
    assert "publications/s" in done.stdout and "200 subscriptions, 4 matching" in done.stdout
    assert "load_before" in done.stdout

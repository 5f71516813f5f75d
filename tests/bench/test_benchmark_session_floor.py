"""`python -m bench.session_floor` serves the same units of work from Baton, from a bare
Uvicorn application and from a bare one that writes the fewest rows a unit of work needs,
and prints each server's CPU per operation. The output's shape and what the storage floor
wrote are checked: never a timing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent

pytestmark = pytest.mark.once  # the command makes its own SQLite platform whatever the suite's database


def test_every_server_answers_every_operation_and_the_figures_come_out_as_json():
    proc = subprocess.run(
        [sys.executable, "-W", "error::DeprecationWarning", "-m", "bench.session_floor"]
        + ["--units", "5", "--rounds", "1", "--gap-ms", "0", "1", "--json"],
        check=False,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert (result["units"], result["rounds"]) == (5, 1)
    assert set(result["server_cpu_ms_per_operation"]) == {"floor", "floor+storage", "baton"}
    assert all(len(values) == 1 and values[0] >= 0 for values in result["rounds_ms"].values())
    # each pause measured in turn, every server in each; the first is the top level's
    assert [figures["gap_ms"] for figures in result["by_gap"]] == [0, 1]
    assert result["by_gap"][0]["server_cpu_ms_per_operation"] == result["server_cpu_ms_per_operation"]
    for figures in result["by_gap"]:
        assert set(figures["server_cpu_ms_per_operation"]) == {"floor", "floor+storage", "baton"}
        assert all(len(values) == 1 and values[0] >= 0 for values in figures["rounds_ms"].values())
    # the storage floor committed every unit of work it served, one message each: 10 to warm
    # up, then each pause's round of 5
    assert result["floor_storage_wrote"] == {"committed_units_of_work": 20, "messages": 20}


def test_a_negative_pause_is_refused_with_a_clear_error():
    proc = subprocess.run(
        [sys.executable, "-m", "bench.session_floor", "--gap-ms", "-1"],
        check=False,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "--gap-ms: a pause is 0 ms or more." in proc.stderr

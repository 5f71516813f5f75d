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
        + ["--units", "5", "--rounds", "1", "--json"],
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
    # the storage floor committed every unit of work it served, one message each: 10 to warm
    # up, then the round's 5
    assert result["floor_storage_wrote"] == {"committed_units_of_work": 15, "messages": 15}

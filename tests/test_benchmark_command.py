"""`python manage.py benchmark` runs end to end on its own scratch database and prints its
table. Only the shape of the output is checked: never a timing."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from brokers.benchmark.report import Result, scenario_messages, table, table_parse

ROOT = Path(__file__).resolve().parent.parent


def test_scenario_messages_gives_every_client_whole_units_of_work():
    assert scenario_messages(20, batch=1) == 20
    assert scenario_messages(20, batch=100) == 200
    assert scenario_messages(101, batch=1, clients=8) == 104
    assert scenario_messages(20, batch=100, clients=8) == 800
    assert scenario_messages(1, batch=100, clients=8) == 800


def test_table_round_trips():
    results = [Result("in-process", "put+commit", 1, 1, 20, 0.5), Result("REST", "get+commit", 8, 100, 800, 2.0)]
    rows = table_parse(table(results))
    assert [(r["scenario"], r["clients"], r["batch"], r["messages"], r["rate"]) for r in rows] == [
        ("in-process put+commit", 1, 1, 20, 40.0), ("REST get+commit", 8, 100, 800, 400.0),
    ]


def test_benchmark_command_in_process_prints_positive_rates():
    proc = subprocess.run(
        [sys.executable, "manage.py", "benchmark", "--messages", "20", "--only", "inprocess"],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout
    assert "manage.py benchmark --messages 20 --only inprocess" in out
    assert re.search(r"^scenario\s+clients\s+batch\s+messages\s+seconds\s+msgs/s$", out, re.M)

    rows = table_parse(out)
    assert [(r["scenario"], r["clients"], r["batch"], r["messages"]) for r in rows] == [
        ("in-process put+commit", 1, 1, 20),
        ("in-process get+commit", 1, 1, 20),
        ("in-process put+commit", 1, 100, 200),
        ("in-process get+commit", 1, 100, 200),
    ]
    assert all(r["rate"] > 0 and r["seconds"] > 0 for r in rows)
    assert "REST" not in "".join(line for line in out.splitlines() if table_parse(line))

    # It worked in a scratch directory of its own, and removed it.
    scratch = re.search(r"scratch directory (\S+)", proc.stderr)
    assert scratch, proc.stderr
    assert not Path(scratch.group(1)).exists()


def test_benchmark_phases_refuse_to_run_outside_a_scratch_environment():
    proc = subprocess.run(
        [sys.executable, "manage.py", "benchmark", "--phase", "setup", "--result-file", "/dev/null",
         "--broker", "X", "--username", "x"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
        env={k: v for k, v in os.environ.items() if k != "BATON_BENCHMARK_SCRATCH"},
    )
    assert proc.returncode != 0
    assert "internal" in proc.stderr

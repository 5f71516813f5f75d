"""`python -m bench.writes` counts what units of work write, on the database the
suite runs on (a scratch SQLite file, or a scratch database on the PostgreSQL server). Only
the shape and what must hold whatever the engine's design are checked: never a timing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import database_url

ROOT = Path(__file__).resolve().parent.parent.parent


def test_the_counts_come_per_step_and_per_unit_of_work(tmp_path, db):
    url = database_url()
    env = {**os.environ, "BATON_VAR_DIR": str(tmp_path)}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    extra = []
    if url.startswith("sqlite"):
        env.pop("DATABASE_URL", None)  # a scratch file in --directory
        extra = ["--floor"]
    else:
        env["DATABASE_URL"] = url.rsplit("/", 1)[0] + "/postgres"  # the server: it makes its own database
    proc = subprocess.run(
        [sys.executable, "-m", "bench.writes", "--units", "3", "--json", "--directory", str(tmp_path), *extra],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    steps = [(line["step"], line["batch"]) for line in lines if line["kind"] == "step"]
    assert steps == [(s, b) for b in (1, 100) for s in ("put", "put commit", "get", "get commit")]
    units = {(line["unit"], line["batch"]): line for line in lines if line["kind"] == "unit"}
    assert set(units) == {(u, b) for u in ("put+commit", "get+commit", "put+commit+get+commit") for b in (1, 100)}
    for (unit, _), counts in units.items():
        # whatever the design: a unit of work writes something, and its commit is durable
        assert counts["wal_pages"] > 0 and counts["statements"] >= 1 and counts["round_trips"] >= 1
        assert counts["transactions"] >= (2 if unit == "put+commit+get+commit" else 1)
    whole = units[("put+commit+get+commit", 1)]
    parts = units[("put+commit", 1)]["wal_pages"] + units[("get+commit", 1)]["wal_pages"]
    assert abs(whole["wal_pages"] - parts) <= 0.02  # each total rounded to two places
    floors = {(line["unit"], line["batch"]): line["wal_pages"] for line in lines if line["kind"] == "floor"}
    if extra:
        assert set(floors) == {
            (u, b)
            for u in ("floor put+commit", "floor get+commit", "floor put+commit+get+commit", "plain insert+commit")
            for b in (1, 100)
        }
        assert all(pages > 0 for pages in floors.values())
    assert list(tmp_path.iterdir()) == []  # no scratch file left behind


@pytest.mark.once
def test_bad_arguments_are_refused():
    proc = subprocess.run(
        [sys.executable, "-m", "bench.writes", "--units", "0"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2 and "--units must be at least 1" in proc.stderr

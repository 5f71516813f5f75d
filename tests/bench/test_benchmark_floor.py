"""`python -m bench.floor` runs its units of work and prints its table and its
JSON. Only the shape of the output and the writes are checked: never a timing."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from bench.floor import Floor, _in_sqlite_per_unit

ROOT = Path(__file__).resolve().parent.parent.parent


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "bench.floor", *args], check=False, cwd=ROOT, capture_output=True, text=True, timeout=300
    )


def test_a_floor_unit_of_work_writes_what_it_says(tmp_path):
    floor = Floor(tmp_path / "floor.sqlite3")
    try:
        floor.put_commit(1)
        floor.put_commit(100)
        floor.get_commit(100)
        floor.plain(100)
        check = sqlite3.connect(tmp_path / "floor.sqlite3")
        assert check.execute("SELECT state, COUNT(*) FROM unit_of_work GROUP BY state").fetchall() == [("committed", 3)]
        assert check.execute("SELECT depth FROM queue").fetchone() == (1,)
        # the oldest went: what is left is the last message of the unit of 100
        assert check.execute("SELECT COUNT(*), MIN(id), MIN(length(body)) FROM message").fetchone() == (1, 101, 1024)
        assert check.execute("SELECT COUNT(*) FROM taken").fetchone() == (0,)  # the get's commit cleared them
        assert check.execute("SELECT event, COUNT(*) FROM journal GROUP BY event ORDER BY event").fetchall() == [
            ("begin", 3),
            ("commit", 3),
            ("get", 1),
            ("put", 2),
        ]
        assert check.execute("SELECT COUNT(*) FROM plain_message").fetchone() == (100,)
        check.close()
        with pytest.raises(RuntimeError, match="get: 1 messages of 100"):
            floor.get_commit(100)  # never less than it says it measured
        floor.conn.execute("ROLLBACK")
    finally:
        floor.close()
    assert list(tmp_path.iterdir()) == []


def test_the_floor_prints_a_table_and_json_with_the_engine_beside_it(tmp_path, settings):
    if "sqlite" not in settings.DATABASES["default"]["ENGINE"]:
        pytest.skip("the floor is SQLite's: once, in the SQLite pass, is enough")
    proc = run("--units", "10", "--rounds", "1", "--directory", str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [line.split()[:2] for line in proc.stdout.splitlines()[2:6]]
    assert rows == [["put+commit", "1"], ["put+commit", "100"], ["get+commit", "1"], ["get+commit", "100"]]
    assert proc.stdout.splitlines()[-1].startswith("queue flow floor, 1 producer + 1 consumer: ")

    proc = run("--units", "10", "--rounds", "2", "--directory", str(tmp_path), "--baton", "--json")
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    results, flow = lines[:4], lines[4:]
    assert [(r["operation"], r["batch"], r["rounds"], r["units"]) for r in results] == [
        ("put+commit", 1, 2, 10),
        ("put+commit", 100, 2, 1),
        ("get+commit", 1, 2, 10),
        ("get+commit", 100, 2, 1),
    ]
    for r in results:
        assert r["scenario"] == "floor" and r["plain_ms"] > 0 and r["floor_ms"] > 0 and r["baton_ms"] > 0
        assert r["budget_us_per_message"] == pytest.approx(r["budget_ms_per_unit"] * 1000 / r["batch"])
        assert r["baton_in_sqlite_ms"] > 0
        assert r["floor_over_baton"] == pytest.approx(r["floor_ms"] / r["baton_ms"])
        assert r["floor_over_baton_in_sqlite"] == pytest.approx(r["floor_ms"] / r["baton_in_sqlite_ms"])
    assert [(f["scenario"], f["batch"]) for f in flow] == [("flow floor", 1), ("flow floor", 100)]
    assert all(f["msgs_per_s"] > 0 for f in flow)
    assert list(tmp_path.iterdir()) == []  # scratch files and the engine's directory are gone


def test_bad_arguments_are_refused_clearly(tmp_path):
    proc = run("--units", "0")
    assert proc.returncode == 2 and "--units and --rounds must be at least 1" in proc.stderr
    proc = run("--directory", str(tmp_path / "missing"))
    assert proc.returncode == 2 and "no such directory" in proc.stderr


def test_the_time_in_sqlite_counts_the_drivers_calls_and_nothing_else(tmp_path):
    conn = sqlite3.connect(tmp_path / "t.sqlite3")
    conn.execute("CREATE TABLE t (x)")
    calls = []

    def python_only(batch: int) -> None:
        calls.append(sum(range(1000 * batch)))

    def with_statements(batch: int) -> None:
        for _ in range(batch):
            conn.execute("INSERT INTO t VALUES (randomblob(1000))")
        conn.commit()

    assert _in_sqlite_per_unit(python_only, 5, 3) == 0.0
    assert len(calls) == 3
    assert _in_sqlite_per_unit(with_statements, 5, 3) > 0.0
    assert conn.execute("SELECT COUNT(*) FROM t").fetchone() == (15,)
    conn.close()

"""`bench.flow_floor`: the bare server under the queue flow through sessions moves every
message of every flow once, and keeps none (figures are never asserted)."""

from __future__ import annotations

import sqlite3

import pytest

from bench.flow_floor import LABEL, run_flow_floor

pytestmark = pytest.mark.once  # a server on a SQLite file of its own whatever the suite's database


def test_every_flow_moves_its_messages_through_the_floor_and_leaves_none(tmp_path):
    results = run_flow_floor(directory=tmp_path, messages=4)
    assert [(r.path, r.operation, r.clients, r.batch, r.messages) for r in results] == [
        (LABEL, "put+get", 2, 1, 4),
        (LABEL, "put+get", 2, 100, 100),
        (LABEL, "put+get", 8, 1, 4),
        (LABEL, "put+get", 8, 100, 400),
    ]
    assert all(r.rate > 0 for r in results)
    conn = sqlite3.connect(tmp_path / "flow-floor.sqlite3")
    try:
        tables = [name for (name,) in conn.execute("SELECT name FROM sqlite_schema WHERE type = 'table'")]
        assert len(tables) == 4  # a table per flow's queue
        assert [conn.execute(f"SELECT count(*) FROM {name}").fetchone()[0] for name in tables] == [0, 0, 0, 0]
    finally:
        conn.close()

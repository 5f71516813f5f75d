"""The soak's explanation of a checker finding (bench/diagnosis.py): every step the clients
traced for the body, with the steps of the units of work it went through; a database that
cannot be read is said, never raised over the finding."""

from __future__ import annotations

import pytest

from bench.diagnosis import explained, trace_steps
from tests.support.workload import History

pytestmark = pytest.mark.once


def test_a_body_s_steps_include_its_units_of_work_s_commits_and_nothing_else(tmp_path):
    history = History()
    history.trace_open(str(tmp_path / "trace.jsonl"))
    history.trace("p-1", "put", txn="T1", bodies=["p1-1", "p1-2"], outcome="answered")
    history.trace("p-1", "commit", txn="T1", outcome="answered", state="committed")
    history.trace("c-1", "get", txn="T2", bodies=["p1-2"], msg_ids=["M2"], outcome="answered")
    history.trace("c-1", "commit", txn="T2", outcome="unknown", error="NetworkError: gone")
    history.trace("p-2", "put", txn="T3", bodies=["p2-1"], outcome="answered")
    history.trace_close()
    history.trace("p-2", "put", bodies=["p2-2"], outcome="answered")  # after closing: not written

    steps = trace_steps(tmp_path / "trace.jsonl", ["p1-2", "p2-2"])

    assert [(s["actor"], s["step"], s.get("txn")) for s in steps["p1-2"]] == [
        ("p-1", "put", "T1"),
        ("p-1", "commit", "T1"),
        ("c-1", "get", "T2"),
        ("c-1", "commit", "T2"),
    ]
    assert steps["p2-2"] == []


def test_an_unreadable_database_is_reported_in_the_explanation(tmp_path):
    history = History()
    history.trace_open(str(tmp_path / "trace.jsonl"))
    history.trace("p-1", "put", bodies=["p1-1"], msg_ids=["M1"], outcome="answered")
    history.trace_close()

    found = explained(f"sqlite:///{tmp_path / 'missing.sqlite3'}", history.trace_path, ["p1-1"])

    assert found["p1-1"]["client"][0]["msg_ids"] == ["M1"]
    assert "error" in found["p1-1"]["database"]

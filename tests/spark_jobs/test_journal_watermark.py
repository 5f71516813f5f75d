"""Incremental journal exports with a watermark: every event exactly once, even one whose
writer commits after later events were exported (PostgreSQL ids are not commit-ordered)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from django.db import connection

from tests.conftest import database_url
from transactions.journal import journal_event, journal_record, journal_step_event
from transactions.journal_export import journal_export_increment
from transactions.models import JournalEvent

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]  # postgres: also run on PostgreSQL

T0 = datetime(2025, 5, 1, 12, 0, tzinfo=UTC)


def put(msg_id: str) -> None:
    journal_record(events=[journal_event("put", broker="QM1", queue="Q1", msg_id=msg_id, at=T0)])


def exported(path) -> list[str]:
    return [json.loads(line)["msg_id"] for line in path.read_text().splitlines()]


def test_increments_export_each_event_once(tmp_path):
    put("a")
    put("b")
    first = journal_export_increment(path=tmp_path / "1.jsonl", watermark=None)
    put("c")
    second = journal_export_increment(path=tmp_path / "2.jsonl", watermark=first["watermark"])
    third = journal_export_increment(path=tmp_path / "3.jsonl", watermark=second["watermark"])
    assert exported(tmp_path / "1.jsonl") == ["a", "b"]
    assert exported(tmp_path / "2.jsonl") == ["c"]
    assert third["events"] == 0 and exported(tmp_path / "3.jsonl") == []


def test_an_increment_exports_each_message_of_a_step_once(tmp_path):
    put("a")
    journal_record(
        events=[
            journal_step_event(
                "get", broker="QM1", queue="Q1", transaction_id=None, at=T0, messages=[{"msg_id": "b"}, {"msg_id": "c"}]
            )
        ]
    )
    first = journal_export_increment(path=tmp_path / "1.jsonl", watermark=None)
    assert first["events"] == 3 and exported(tmp_path / "1.jsonl") == ["a", "b", "c"]
    second = journal_export_increment(path=tmp_path / "2.jsonl", watermark=first["watermark"])
    assert second["events"] == 0 and exported(tmp_path / "2.jsonl") == []


def test_a_late_committing_writer_is_never_skipped(tmp_path):
    if connection.vendor != "postgresql":
        pytest.skip("SQLite has one writer at a time: ids are drawn in commit order")
    import psycopg

    put("before")
    late = psycopg.connect(database_url())
    try:
        with late.cursor() as c:  # draws its id now, commits after later events were exported
            c.execute(
                f"INSERT INTO {JournalEvent._meta.db_table} (at, kind, broker, queue, transaction_id, msg_id,"
                " detail) VALUES (now(), 'put', 'QM1', 'Q1', '', 'late', '{}')"
            )
        put("after")  # a larger id, committed first
        first = journal_export_increment(path=tmp_path / "1.jsonl", watermark=None)
        late.commit()
    finally:
        late.close()
    put("last")
    second = journal_export_increment(path=tmp_path / "2.jsonl", watermark=first["watermark"])
    one, two = exported(tmp_path / "1.jsonl"), exported(tmp_path / "2.jsonl")
    assert "late" not in one  # its writer was still in progress: held back, not passed by
    assert sorted(one + two) == ["after", "before", "last", "late"]
    assert second["events"] == len(two)

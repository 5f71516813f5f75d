"""The journal export the Spark jobs read (no Spark here)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from transactions.journal import journal_event, journal_record, journal_step_event
from transactions.journal_export import journal_export

T0 = datetime(2025, 5, 1, 12, 0, 0, 250_001, tzinfo=UTC)


@pytest.fixture
def five_events(db) -> list[int]:
    journal_record(
        events=[
            journal_event("put", broker="QM1", queue="Q1", msg_id=f"m{n}", at=T0, persistent=True, bytes=n)
            for n in range(5)
        ]
    )
    from transactions.models import JournalEvent

    return list(JournalEvent.objects.order_by("id").values_list("id", flat=True))


def lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_export_writes_one_json_object_per_event_in_id_order(five_events, tmp_path):
    path = tmp_path / "staging" / "journal.jsonl"
    summary = journal_export(path=path, chunk_size=2)  # three chunks
    assert summary == {"path": str(path), "events": 5, "last_id": five_events[-1]}
    rows = lines(path)
    assert [r["id"] for r in rows] == five_events
    assert rows[0] == {
        "id": five_events[0],
        "at": "2025-05-01T12:00:00.250001+00:00",
        "kind": "put",
        "broker": "QM1",
        "queue": "Q1",
        "transaction_id": "",
        "msg_id": "m0",
        "detail": {"persistent": True, "bytes": 0},
    }
    assert [p.name for p in path.parent.iterdir()] == ["journal.jsonl"]  # no temporary left behind


def test_export_after_id_and_limit(five_events, tmp_path):
    path = tmp_path / "journal.jsonl"
    summary = journal_export(path=path, after_id=five_events[1], limit=2, chunk_size=1)
    assert summary["events"] == 2 and summary["last_id"] == five_events[3]
    assert [r["id"] for r in lines(path)] == five_events[2:4]
    # Nothing newer: an empty file, and last_id stays where it was.
    assert journal_export(path=path, after_id=five_events[-1]) == {
        "path": str(path),
        "events": 0,
        "last_id": five_events[-1],
    }
    assert path.read_text() == ""


def test_export_replaces_the_file_whole(five_events, tmp_path):
    path = tmp_path / "journal.jsonl"
    path.write_text("old contents\n")
    journal_export(path=path)
    assert len(lines(path)) == 5


def test_failed_export_leaves_the_old_file_and_no_temporary(five_events, tmp_path, monkeypatch):
    path = tmp_path / "journal.jsonl"
    path.write_text("old contents\n")
    monkeypatch.setattr("transactions.journal_export._exported", lambda event: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        journal_export(path=path)
    assert [p.name for p in tmp_path.iterdir()] == ["journal.jsonl"]
    assert path.read_text() == "old contents\n"


def test_command_prints_the_summary(five_events, tmp_path, capsys):
    path = tmp_path / "journal.jsonl"
    call_command("journal_export", str(path), "--after-id", str(five_events[2]))
    assert capsys.readouterr().out.strip() == (f"Exported 2 journal events to {path}; last id {five_events[-1]}.")
    assert len(lines(path)) == 2


def test_command_refuses_a_negative_after_id(tmp_path):
    with pytest.raises(CommandError, match="negative"):
        call_command("journal_export", str(tmp_path / "j.jsonl"), "--after-id", "-1")


def test_a_row_of_several_messages_exports_as_one_line_each(db, tmp_path):
    """A step's put of three messages is one journal row; the export (and so every Spark
    job) sees the three events it stands for, each with the row's id and time."""
    journal_record(
        events=[
            journal_step_event(
                "put",
                broker="QM1",
                queue="Q1",
                transaction_id="t1",
                at=T0,
                messages=[{"msg_id": f"m{n}", "persistent": True, "bytes": n} for n in range(3)],
            ),
            journal_event("commit", broker="QM1", transaction_id="t1", at=T0),
        ]
    )
    from transactions.models import JournalEvent

    put, commit = JournalEvent.objects.order_by("id").values_list("id", flat=True)
    path = tmp_path / "journal.jsonl"
    assert journal_export(path=path, limit=1) == {"path": str(path), "events": 3, "last_id": put}  # rows, not lines
    assert [(r["id"], r["msg_id"], r["detail"]) for r in lines(path)] == [
        (put, f"m{n}", {"persistent": True, "bytes": n}) for n in range(3)
    ]
    assert {(r["kind"], r["transaction_id"], r["at"]) for r in lines(path)} == {
        ("put", "t1", "2025-05-01T12:00:00.250001+00:00")
    }
    assert journal_export(path=path, after_id=put)["events"] == 1
    assert [(r["id"], r["kind"]) for r in lines(path)] == [(commit, "commit")]

"""The journal's rows: one per step, a put, get or lock of several messages one row that
stands for each of them (transactions/journal.py)."""

from __future__ import annotations

from datetime import datetime, timezone

from transactions.journal import journal_messages, journal_step_event

AT = datetime(2026, 11, 26, 12, 0, tzinfo=timezone.utc)


def test_a_step_of_one_message_is_the_row_it_always_was():
    event = journal_step_event(
        "put", broker="QM1", queue="Q1", transaction_id="t1", at=AT, messages=[{"msg_id": "m1", "bytes": 3}]
    )
    assert (event.msg_id, event.detail, event.count, event.transaction_id) == ("m1", {"bytes": 3}, 1, "t1")


def test_a_step_of_several_messages_is_one_row_with_each_in_order():
    messages = [{"msg_id": f"m{i}", "bytes": i} for i in range(3)]
    event = journal_step_event("get", broker="QM1", queue="Q1", transaction_id=None, at=AT, messages=messages)
    assert (event.msg_id, event.count, event.transaction_id) == ("", 3, "")
    assert event.detail == {"messages": messages}


def test_a_row_of_several_messages_reads_back_as_one_event_each_with_the_rows_id():
    row = {
        "id": 7,
        "kind": "get",
        "queue": "Q1",
        "msg_id": "",
        "detail": {"messages": [{"msg_id": "m0", "put_time": "p0"}, {"msg_id": "m1", "put_time": "p1"}]},
    }
    assert journal_messages(row) == [
        {"id": 7, "kind": "get", "queue": "Q1", "msg_id": "m0", "detail": {"put_time": "p0"}},
        {"id": 7, "kind": "get", "queue": "Q1", "msg_id": "m1", "detail": {"put_time": "p1"}},
    ]
    assert row["detail"]["messages"][0] == {"msg_id": "m0", "put_time": "p0"}  # not changed in place


def test_rows_of_one_message_or_none_read_back_as_themselves():
    for row in (
        {"id": 1, "kind": "begin", "msg_id": "", "detail": {}},
        {"id": 2, "kind": "put", "msg_id": "m1", "detail": {"bytes": 3}},
        {"id": 3, "kind": "link", "msg_id": "m1", "detail": {"messages": "not a step's"}},
    ):
        assert journal_messages(row) == [row]

"""What a put, get or lock of several messages writes to the journal: one row for the step,
which stands for each message in order (transactions/journal.py); one message, the row it
always was."""

from __future__ import annotations

from brokers.services.message_input import MessageInput
from brokers.services.messages import message_get, message_put
from transactions.journal import journal_messages
from transactions.manager import transaction_begin
from transactions.models import JournalEvent


def _rows(kind: str) -> list[dict]:
    return list(JournalEvent.objects.filter(kind=kind, queue="Q1").order_by("id").values())


def test_a_get_of_several_under_a_unit_of_work_is_one_row(queue):
    put = message_put(broker="QM1", queue="Q1", messages=[MessageInput(body=b"x" * n) for n in range(1, 5)])
    txn = transaction_begin(broker="QM1", timeout_ms=60_000)
    got = message_get(broker="QM1", queue="Q1", transaction_id=txn.id, batch=3).messages
    [row] = _rows("get")
    assert (row["count"], row["transaction_id"], row["msg_id"]) == (3, txn.id, "")
    events = journal_messages(row)
    assert [e["msg_id"] for e in events] == [m.msg_id for m in got] == [m.msg_id for m in put.messages[:3]]
    assert [set(e["detail"]) for e in events] == [{"put_time", "preemptive"}] * 3
    message_get(broker="QM1", queue="Q1", batch=1)  # the last one, alone: the row it always was
    last = _rows("get")[-1]
    assert (last["count"], last["msg_id"]) == (1, put.messages[3].msg_id)
    assert last["detail"]["preemptive"] is False


def test_a_peek_lock_of_several_is_one_row(queue):
    message_put(broker="QM1", queue="Q1", messages=[MessageInput(body=b"a")] * 2)
    locked = message_get(broker="QM1", queue="Q1", batch=2, mode="peek_lock").messages
    [row] = _rows("lock")
    assert row["count"] == 2
    assert [(e["msg_id"], e["detail"]) for e in journal_messages(row)] == [
        (m.msg_id, {"delivery_count": m.delivery_count}) for m in locked
    ]


def test_a_put_under_two_units_writes_a_row_for_each(queue):
    """``syncpoint="if_persistent"``: the persistent messages under a unit of work, the
    others at once; each part is a row of its own with its own unit of work."""
    put = message_put(
        broker="QM1",
        queue="Q1",
        messages=[MessageInput(body=b"p", persistence=p) for p in ("persistent", "not_persistent", "persistent")],
        syncpoint="if_persistent",
    )
    rows = _rows("put")
    assert sorted((r["count"], bool(r["transaction_id"])) for r in rows) == [(1, False), (2, True)]
    assert {e["msg_id"] for r in rows for e in journal_messages(r)} == {m.msg_id for m in put.messages}

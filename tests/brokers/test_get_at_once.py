"""PostgreSQL: a get sent whole in one round trip (``get.py``'s ``_get_called``, one call of
``baton_get_v1``): what it writes must be what the get's statements write on SQLite (the
unit of work it begins, the journal's rows, the room given back, the wake-up), and whatever
the function refuses must get the same answer (settled first, or the same error)."""

from __future__ import annotations

import psycopg
import pytest
from django.db import connection
from django.utils import timezone

from baton_client.errors import QueueInUse
from brokers.models import Message, Queue
from brokers.selectors import queue_reserved_depth
from brokers.services.connections import connection_open
from brokers.services.messages import message_get, message_put
from brokers.services.queues import queue_define
from tests.conftest import bodies, msgs
from tests.transactions.test_round_trips import _round_trips, _warm
from baton_client.errors import TransactionNotActive
from transactions.exceptions import TransactionNotFound
from transactions.journal import journal_step_event
from transactions.manager import transaction_begin, transaction_commit
from transactions.models import JournalEvent, Transaction
from transactions.queries import WAKEUP_CHANNEL

pytestmark = [
    pytest.mark.django_db(transaction=True),  # the steps drive their own transactions, as in the servers
    pytest.mark.skipif(connection.vendor != "postgresql", reason="the one-round-trip get is PostgreSQL's"),
]


def _journal(kind: str) -> list[JournalEvent]:
    return list(JournalEvent.objects.filter(kind=kind).order_by("id"))


def _expected(messages, *, transaction_id: str | None):
    """The row the get's statements write for this step (``_taken``)."""
    return journal_step_event(
        "get",
        broker="QM1",
        queue="Q1",
        transaction_id=transaction_id,
        at=timezone.now(),
        messages=[{"msg_id": m.msg_id, "put_time": m.put_time.isoformat(), "preemptive": False} for m in messages],
    )


def _same_row(row: JournalEvent, event) -> None:
    assert (row.broker, row.queue, row.transaction_id, row.msg_id, row.detail, row.count) == (
        event.broker,
        event.queue,
        event.transaction_id,
        event.msg_id,
        event.detail,
        event.count,
    )


def test_a_final_get_removes_the_message_gives_its_room_back_and_journals_it(queue):
    _warm()
    message_put(broker="QM1", queue="Q1", messages=msgs("a", "b"))
    before = JournalEvent.objects.count()
    got, trips = _round_trips(lambda: message_get(broker="QM1", queue="Q1"))
    assert (bodies(got), got.transaction_id, trips) == (["a"], None, 1)
    assert got.messages[0].queue.name == "Q1"
    assert list(Message.objects.values_list("body", flat=True)) == [b"b"]
    assert queue_reserved_depth(queue=Queue.objects.get(name="Q1")) == 1
    (row,) = JournalEvent.objects.order_by("id")[before:]
    _same_row(row, _expected(got.messages, transaction_id=None))


def test_put_times_are_written_as_python_writes_them_with_and_without_microseconds(queue, clock):
    _warm()
    clock.now = clock.now.replace(microsecond=0)
    message_put(broker="QM1", queue="Q1", messages=msgs("whole second"))
    clock.advance(microseconds=1_500)
    message_put(broker="QM1", queue="Q1", messages=msgs("a fraction"))
    for _ in range(2):
        got = message_get(broker="QM1", queue="Q1")
        _same_row(_journal("get")[-1], _expected(got.messages, transaction_id=None))
    assert "." not in _journal("get")[-2].detail["put_time"]
    assert "." in _journal("get")[-1].detail["put_time"]


def test_a_get_of_several_that_begins_its_unit_of_work_writes_it_and_its_begin_first(broker):
    queue_define(broker="QM1", name="Q1", delivery_sequence="priority")
    _warm()
    message_put(broker="QM1", queue="Q1", messages=msgs("low", priority=1))
    message_put(broker="QM1", queue="Q1", messages=msgs("high", priority=9))
    message_put(broker="QM1", queue="Q1", messages=msgs("low too", priority=1))
    got, trips = _round_trips(lambda: message_get(broker="QM1", queue="Q1", batch=5, syncpoint="yes"))
    assert (bodies(got), trips) == (["high", "low", "low too"], 1)
    txn = Transaction.objects.get(pk=got.transaction_id)
    assert (txn.state, txn.broker, txn.owner, txn.marks, txn.user_id) == ("active", "QM1", "", [], None)
    assert 59 <= (txn.deadline_at - txn.created_at).total_seconds() <= 60  # the broker's timeout
    rows = list(JournalEvent.objects.filter(transaction_id=txn.id).order_by("id"))
    assert [r.kind for r in rows] == ["begin", "get"]
    assert (rows[0].detail, rows[0].msg_id, rows[0].count) == ({}, "", 1)
    _same_row(rows[1], _expected(got.messages, transaction_id=txn.id))
    assert set(Message.objects.values_list("get_transaction_id", flat=True)) == {txn.id}
    transaction_commit(transaction_id=txn.id)
    assert not Message.objects.exists()


def test_a_get_that_finds_nothing_begins_nothing_and_writes_nothing(queue):
    _warm()
    units, events = Transaction.objects.count(), JournalEvent.objects.count()
    got, trips = _round_trips(lambda: message_get(broker="QM1", queue="Q1", syncpoint="yes"))
    assert (got.messages, got.transaction_id, got.reason, trips) == ([], None, "empty", 1)
    got = message_get(broker="QM1", queue="Q1", msg_id="a" * 48)
    assert got.reason == "no_match"
    assert (Transaction.objects.count(), JournalEvent.objects.count()) == (units, events)


def test_a_final_get_notifies_its_queue_inside_its_transaction(queue):
    _warm()
    message_put(broker="QM1", queue="Q1", messages=msgs("a"))
    params = connection.get_connection_params()
    params.pop("context", None), params.pop("cursor_factory", None), params.pop("prepare_threshold", None)
    with psycopg.connect(**params, autocommit=True) as listener:
        listener.execute(f"LISTEN {WAKEUP_CHANNEL}")
        assert bodies(message_get(broker="QM1", queue="Q1")) == ["a"]
        heard = [n.payload for n in listener.notifies(timeout=5, stop_after=1)]
    assert heard == [f"queue:{Queue.objects.get(name='Q1').pk}"]


def test_someone_elses_or_a_finished_unit_of_work_gets_the_careful_answer(queue, django_user_model):
    _warm()
    message_put(broker="QM1", queue="Q1", messages=msgs("a"))
    owner, stranger = (django_user_model.objects.create_user(name) for name in ("owner", "stranger"))
    theirs = transaction_begin(broker="QM1", timeout_ms=60_000, user_id=owner.pk)
    with pytest.raises(TransactionNotFound):
        message_get(broker="QM1", queue="Q1", transaction_id=theirs.id, user=stranger)
    done = transaction_begin(broker="QM1", timeout_ms=60_000)
    transaction_commit(transaction_id=done.id)
    with pytest.raises(TransactionNotActive):
        message_get(broker="QM1", queue="Q1", transaction_id=done.id)
    assert bodies(message_get(broker="QM1", queue="Q1", transaction_id=theirs.id, user=owner)) == ["a"]


def test_an_overdue_unit_of_work_holding_the_queue_is_rolled_back_first(queue, clock):
    _warm()
    message_put(broker="QM1", queue="Q1", messages=msgs("a"))
    stuck = transaction_begin(broker="QM1", timeout_ms=1_000)
    assert bodies(message_get(broker="QM1", queue="Q1", transaction_id=stuck.id)) == ["a"]
    clock.advance(seconds=2)
    assert bodies(message_get(broker="QM1", queue="Q1")) == ["a"]  # returned by the rollback, then taken
    assert Transaction.objects.get(pk=stuck.id).state == "rolled_back"


def test_another_consumers_exclusive_input_is_refused(queue):
    _warm()
    conn = connection_open(broker="QM1", client_name="exclusive one").connection
    assert bodies(message_get(broker="QM1", queue="Q1", connection_id=conn.conn_id, access="exclusive")) == []
    message_put(broker="QM1", queue="Q1", messages=msgs("a"))
    with pytest.raises(QueueInUse):
        message_get(broker="QM1", queue="Q1")
    assert bodies(message_get(broker="QM1", queue="Q1", connection_id=conn.conn_id, access="exclusive")) == ["a"]


def test_a_message_asking_for_reports_is_got_the_careful_way_which_sends_them(queue):
    queue_define(broker="QM1", name="REPLY")
    _warm()
    message_put(broker="QM1", queue="Q1", messages=msgs("m", report=["cod"], reply_to_queue="REPLY"))
    got, trips = _round_trips(lambda: message_get(broker="QM1", queue="Q1"))
    assert bodies(got) == ["m"] and trips > 1
    (report,) = message_get(broker="QM1", queue="REPLY").messages
    assert report.feedback == "cod"

"""PostgreSQL: a commit is one call of ``baton_commit_v1`` (brokers migration 0021), one
round trip with its step's ``BEGIN`` and ``COMMIT``; for a unit of work with marks or links
the call changes nothing and the transaction manager's statements and resource managers
commit it, answering as they always did. The function's errors become the project's. The
round trips are counted from libpq's trace, as in test_round_trips.py."""

from __future__ import annotations

import pytest
from django.db import connection

from brokers.models import Message, Queue, QueueRelease, put_open_q
from brokers.selectors import queue_reserved_depth
from brokers.services.messages import message_get, message_put
from brokers.services.queues import queue_define
from tests.helpers import wakeup_listener
from tests.conftest import bodies, msgs
from tests.transactions.test_round_trips import _round_trips, _warm
from baton_client.errors import TransactionBackedOut
from transactions.exceptions import TransactionNotFound
from transactions.models import Transaction as TransactionRow
from transactions.manager import transaction_begin, transaction_commit, transaction_rollback
from transactions.models import JournalEvent, Transaction

pytestmark = [
    pytest.mark.django_db(transaction=True),  # the steps drive their own transactions, as in the servers
    pytest.mark.skipif(connection.vendor != "postgresql", reason="the one-round-trip commit is PostgreSQL's"),
]


def _put_uncommitted(*bodies_: str, queue: str = "Q1", **fields) -> str:
    return message_put(broker="QM1", queue=queue, messages=msgs(*bodies_, **fields), syncpoint="yes").transaction_id


def test_a_commit_of_puts_makes_them_available_and_records_it_in_one_round_trip(queue):
    _warm()
    txn = _put_uncommitted("a", "b")
    outcome, trips = _round_trips(lambda: transaction_commit(transaction_id=txn))
    assert (outcome.state, trips) == ("committed", 1)
    assert outcome.transaction.id == txn and outcome.transaction.resolved_at is not None
    row = Transaction.objects.get(pk=txn)
    assert (row.state, row.resolved_at is not None, row.reason, row.cause_id) == ("committed", True, "", None)
    assert not Message.objects.filter(put_open_q(), put_transaction_id=txn).exists()
    event = JournalEvent.objects.filter(transaction_id=txn, kind="commit").get()
    assert (event.broker, event.queue, event.msg_id, event.detail, event.count) == ("QM1", "", "", {}, 1)
    assert bodies(message_get(broker="QM1", queue="Q1", batch=5)) == ["a", "b"]


def test_a_commit_of_gets_removes_them_and_gives_their_room_back(broker):
    queue_define(broker="QM1", name="Q1", max_depth=2)
    _warm()
    message_put(broker="QM1", queue="Q1", messages=msgs("a", "b"))
    got = message_get(broker="QM1", queue="Q1", batch=2, syncpoint="yes")
    q = Queue.objects.get(name="Q1")
    assert queue_reserved_depth(queue=q) == 2
    outcome, trips = _round_trips(lambda: transaction_commit(transaction_id=got.transaction_id))
    assert (outcome.state, trips) == ("committed", 1)
    assert not Message.objects.filter(queue=q).exists()
    assert queue_reserved_depth(queue=q) == 0
    assert sum(QueueRelease.objects.filter(queue=q).values_list("released", flat=True)) >= 2
    message_put(broker="QM1", queue="Q1", messages=msgs("c", "d"))  # the room is back: the queue is not full


def test_a_unit_of_work_that_did_nothing_commits_in_one_round_trip(queue):
    _warm()
    txn = transaction_begin(broker="QM1", timeout_ms=60_000)
    outcome, trips = _round_trips(lambda: transaction_commit(transaction_id=txn.id))
    assert (outcome.state, trips) == ("committed", 1)


def test_the_commit_notifies_the_queue_and_the_unit_of_work_after_it_commits(queue):
    """Other processes' waiters hear of the commit through PostgreSQL's NOTIFY, sent after
    it by this process's publisher, from a connection of its own: the keys come back in the
    commit's answer (they are known only to the database until it commits), and a NOTIFY
    inside the commit would hold PostgreSQL's notification lock through its WAL flush."""
    _warm()
    txn = _put_uncommitted("a")
    q = Queue.objects.get(name="Q1")
    with wakeup_listener() as listener:
        transaction_commit(transaction_id=txn)
        heard = list(listener.notifies(timeout=5, stop_after=1))
    assert heard and set(heard[0].payload.split()) >= {f"queue:{q.pk}", f"txn:{txn}"}
    assert heard[0].pid != connection.connection.info.backend_pid


def test_a_rolled_back_unit_of_work_is_refused_with_its_reason(queue):
    _warm()
    txn = _put_uncommitted("a")
    transaction_rollback(transaction_id=txn, reason="changed my mind")
    with pytest.raises(TransactionBackedOut) as refused:
        transaction_commit(transaction_id=txn)
    assert refused.value.reason == "changed my mind"
    assert bodies(message_get(broker="QM1", queue="Q1")) == []


def test_a_committed_unit_of_work_answers_committed_again(queue):
    _warm()
    txn = _put_uncommitted("a")
    transaction_commit(transaction_id=txn)
    assert transaction_commit(transaction_id=txn).state == "committed"
    assert JournalEvent.objects.filter(transaction_id=txn, kind="commit").count() == 1


def test_an_unknown_unit_of_work_is_not_found(queue):
    _warm()
    with pytest.raises(TransactionNotFound):
        transaction_commit(transaction_id="f" * 48)


def test_an_overdue_unit_of_work_is_rolled_back_not_committed(queue, clock):
    _warm()
    txn = transaction_begin(broker="QM1", timeout_ms=1_000)
    message_put(broker="QM1", queue="Q1", messages=msgs("a"), transaction_id=txn.id)
    clock.advance(seconds=2)
    with pytest.raises(TransactionBackedOut):
        transaction_commit(transaction_id=txn.id)
    assert Transaction.objects.get(pk=txn.id).state == "rolled_back"
    assert bodies(message_get(broker="QM1", queue="Q1")) == []


def test_a_linked_unit_of_work_is_held_by_the_managers(queue):
    _warm()
    producer = _put_uncommitted("a")
    consumer = message_get(broker="QM1", queue="Q1", syncpoint="yes", preemptive=True)
    assert bodies(consumer) == ["a"]
    held = transaction_commit(transaction_id=consumer.transaction_id)
    assert (held.state, held.waiting_on) == ("commit_held", [producer])
    assert transaction_commit(transaction_id=producer).state == "committed"
    assert Transaction.objects.get(pk=consumer.transaction_id).state == "committed"
    assert not Message.objects.exists()


def test_a_marked_unit_of_work_is_committed_by_its_managers_after_one_call_that_changes_nothing(queue):
    _warm()
    transaction_commit(transaction_id=_put_uncommitted("w", dedup_key="k0"))  # its statements prepared
    assert bodies(message_get(broker="QM1", queue="Q1")) == ["w"]
    marked = _put_uncommitted("a", dedup_key="k1")
    assert TransactionRow.objects.get(pk=marked).marks == ["dedup"]
    outcome, trips = _round_trips(lambda: transaction_commit(transaction_id=marked))
    assert outcome.state == "committed" and trips > 1
    assert JournalEvent.objects.filter(transaction_id=marked, kind="commit").count() == 1
    assert bodies(message_get(broker="QM1", queue="Q1", batch=5)) == ["a"]


def test_a_unit_of_work_on_two_queues_commits_in_one_round_trip(queue):
    queue_define(broker="QM1", name="Q2")
    _warm()
    txn = transaction_begin(broker="QM1", timeout_ms=60_000)
    message_put(broker="QM1", queue="Q1", messages=msgs("a"), transaction_id=txn.id)
    message_put(broker="QM1", queue="Q2", messages=msgs("b"), transaction_id=txn.id)
    outcome, trips = _round_trips(lambda: transaction_commit(transaction_id=txn.id))
    assert (outcome.state, trips) == ("committed", 1)
    assert bodies(message_get(broker="QM1", queue="Q1")) == ["a"]
    assert bodies(message_get(broker="QM1", queue="Q2")) == ["b"]


def test_puts_on_a_commit_ordered_queue_get_commit_sequences_in_one_round_trip(broker):
    queue_define(broker="QM1", name="Q1", read_order="commit")
    _warm()
    first, second = _put_uncommitted("first"), _put_uncommitted("second")
    _, trips = _round_trips(lambda: transaction_commit(transaction_id=second))
    assert trips == 1
    transaction_commit(transaction_id=first)
    assert bodies(message_get(broker="QM1", queue="Q1", batch=5)) == ["second", "first"]
    assert not Message.objects.filter(commit_seq__isnull=True).exists()

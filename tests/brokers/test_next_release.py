"""``queue_next_release``: when a waiting get must look again with no commit to wake it (a
peek-lock or the deadline of a unit of work holding one of the queue's messages running
out). One statement, asked after every look that found nothing."""

from __future__ import annotations

from datetime import timedelta

from django.test.utils import CaptureQueriesContext
from django.db import connection
from django.utils import timezone

from brokers.models import Queue
from brokers.selectors import queue_next_release
from brokers.services.messages import message_get, message_put
from brokers.services.queues import queue_define
from tests.conftest import msgs
from transactions.manager import transaction_begin, transaction_commit, transaction_rollback
from transactions.models import Transaction


def _queue_id(name: str = "Q1") -> int:
    return Queue.objects.get(broker__name="QM1", name=name).pk


def test_nothing_to_wait_for_on_an_empty_queue_or_one_whose_messages_are_free(queue):
    assert queue_next_release(queue_id=_queue_id(), now=timezone.now()) is None
    message_put(broker="QM1", queue="Q1", messages=msgs("free"))
    assert queue_next_release(queue_id=_queue_id(), now=timezone.now()) is None


def test_the_earliest_of_a_peek_lock_and_a_holders_deadline_on_this_queue_only(queue):
    queue_define(broker="QM1", name="Q2")
    message_put(broker="QM1", queue="Q1", messages=msgs("locked", "held"))
    message_put(broker="QM1", queue="Q2", messages=msgs("elsewhere"))
    locked = message_get(broker="QM1", queue="Q1", mode="peek_lock").messages[0]
    holder = transaction_begin(broker="QM1", timeout_ms=3_600_000)
    message_get(broker="QM1", queue="Q1", transaction_id=holder.id)
    other = transaction_begin(broker="QM1", timeout_ms=1_000)  # sooner, but on Q2
    message_get(broker="QM1", queue="Q2", transaction_id=other.id)
    deadline = Transaction.objects.get(pk=holder.id).deadline_at
    now = timezone.now()
    assert locked.locked_until < deadline
    q1 = _queue_id()
    with CaptureQueriesContext(connection) as queries:
        assert queue_next_release(queue_id=q1, now=now) == locked.locked_until
    assert len(queries) == 1
    assert queue_next_release(queue_id=_queue_id(), now=locked.locked_until) == deadline  # a lock run out: not ahead
    assert queue_next_release(queue_id=_queue_id("Q2"), now=now) == Transaction.objects.get(pk=other.id).deadline_at
    assert queue_next_release(queue_id=_queue_id(), now=deadline + timedelta(seconds=1)) is None
    transaction_rollback(transaction_id=holder.id)
    assert queue_next_release(queue_id=_queue_id(), now=locked.locked_until) is None  # no holder now


def test_a_committed_holder_is_not_waited_for(queue):
    message_put(broker="QM1", queue="Q1", messages=msgs("a", "b"))
    holder = transaction_begin(broker="QM1", timeout_ms=60_000)
    message_get(broker="QM1", queue="Q1", transaction_id=holder.id)
    assert queue_next_release(queue_id=_queue_id(), now=timezone.now()) is not None
    transaction_commit(transaction_id=holder.id)
    assert queue_next_release(queue_id=_queue_id(), now=timezone.now()) is None

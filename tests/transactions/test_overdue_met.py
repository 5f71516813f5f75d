"""A unit of work past its deadline is rolled back by the first get or commit that meets it
(no housekeeping needed): a get on a queue whose messages it holds, a commit that would wait
on it upstream. At the edge of the deadline, on a clock the tests move by hand (``clock``)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from brokers.models import Message
from brokers.services.messages import message_get, message_put
from tests.conftest import bodies, msgs
from baton_client.errors import TransactionBackedOut
from transactions.manager import transaction_begin, transaction_commit, transactions_time_out
from transactions.models import Transaction, TransactionState

pytestmark = pytest.mark.postgres


def _state(txn_id: str) -> tuple[str, str]:
    row = Transaction.objects.get(pk=txn_id)
    return row.state, row.reason


def _get(**options):
    return message_get(broker="QM1", queue="Q1", **options)


def test_a_get_takes_the_messages_of_a_getter_past_its_deadline(queue, clock):
    message_put(broker="QM1", queue="Q1", messages=msgs("M1", "M2"))
    holder = transaction_begin(broker="QM1", timeout_ms=1_000)
    assert bodies(_get(transaction_id=holder.id, batch=2)) == ["M1", "M2"]
    clock.now = holder.deadline_at - timedelta(microseconds=1)
    assert _get().reason == "empty"
    assert _state(holder.id) == (TransactionState.ACTIVE, "")
    clock.now = holder.deadline_at
    got = _get()
    assert bodies(got) == ["M1"] and got.messages[0].backout_count == 1
    assert _state(holder.id) == (TransactionState.ROLLED_BACK, "timeout")
    with pytest.raises(TransactionBackedOut):
        _get(transaction_id=holder.id)
    assert transactions_time_out() == []  # nothing left for housekeeping


def test_a_get_meeting_an_overdue_putter_rolls_it_back(queue, clock):
    """Its uncommitted puts vanish (a pre-emptive getter would otherwise take a message that
    is about to go)."""
    putter = transaction_begin(broker="QM1", timeout_ms=1_000)
    message_put(broker="QM1", queue="Q1", messages=msgs("M1"), transaction_id=putter.id)
    clock.now = putter.deadline_at
    getter = transaction_begin(broker="QM1", timeout_ms=60_000)
    assert _get(transaction_id=getter.id, preemptive=True).messages == []
    assert _state(putter.id) == (TransactionState.ROLLED_BACK, "timeout")
    assert Message.objects.filter(queue__name="Q1").count() == 0


def test_a_commit_meeting_an_overdue_upstream_is_backed_out_at_once(queue, clock):
    producer = transaction_begin(broker="QM1", timeout_ms=1_000)
    message_put(broker="QM1", queue="Q1", messages=msgs("M1"), transaction_id=producer.id)
    consumer = transaction_begin(broker="QM1", timeout_ms=60_000)
    assert bodies(_get(transaction_id=consumer.id, preemptive=True)) == ["M1"]
    clock.now = producer.deadline_at - timedelta(microseconds=1)
    assert transaction_commit(transaction_id=consumer.id).state == TransactionState.COMMIT_HELD
    clock.now = producer.deadline_at
    with pytest.raises(TransactionBackedOut) as raised:
        transaction_commit(transaction_id=consumer.id)
    assert raised.value.details["transaction"] == consumer.id
    assert _state(consumer.id) == (TransactionState.ROLLED_BACK, f"cascade from {producer.id}")
    assert _state(producer.id) == (TransactionState.ROLLED_BACK, "timeout")
    assert Message.objects.filter(queue__name="Q1").count() == 0

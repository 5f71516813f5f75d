"""Units of work through the transaction manager: states, errors, timeouts."""

from __future__ import annotations

import time

import pytest
from django.utils import timezone

from brokers.models import Message, Queue
from brokers.selectors import queue_depths
from brokers.services.messages import message_browse, message_get, message_put
from tests.conftest import bodies, msgs
from baton_client.errors import TransactionBackedOut, TransactionNotActive
from transactions.exceptions import TransactionNotFound
from transactions.manager import (
    transaction_begin,
    transaction_check,
    transaction_commit,
    transaction_rollback,
    transactions_time_out,
)
from transactions.models import Transaction, TransactionState


def browse_all(queue: str = "Q1") -> list[tuple[str, int]]:
    return [
        (bytes(m.body).decode(), m.backout_count)
        for m in message_browse(broker="QM1", queue=queue, limit=1000).messages
    ]


def depth(name: str = "Q1") -> dict[str, int]:
    q = Queue.objects.get(broker__name="QM1", name=name)
    return queue_depths(queue_ids=[q.pk])[q.pk]


def wait_past(deadline, limit_s: float = 10.0) -> None:
    """Spin on the clock until ``timezone.now()`` is past ``deadline`` (bounded)."""
    give_up = time.monotonic() + limit_s
    while timezone.now() <= deadline:
        assert time.monotonic() < give_up, "the clock did not pass the deadline"
        time.sleep(0.001)


def fresh(txn_id: str) -> Transaction:
    return Transaction.objects.get(pk=txn_id)


# --- states ----------------------------------------------------------------------------


def test_begin_gives_an_active_transaction_with_a_deadline(broker):
    before = timezone.now()
    txn = transaction_begin(broker="QM1", timeout_ms=5_000)
    stored = fresh(txn.id)
    assert stored.state == TransactionState.ACTIVE and stored.broker == "QM1"
    assert before + timezone.timedelta(milliseconds=5_000) <= stored.deadline_at


def test_commit_moves_to_committed(queue):
    txn = transaction_begin(broker="QM1", timeout_ms=60_000)
    outcome = transaction_commit(transaction_id=txn.id)
    assert outcome.state == TransactionState.COMMITTED and outcome.waiting_on == []
    stored = fresh(txn.id)
    assert stored.state == TransactionState.COMMITTED and stored.resolved_at is not None


def test_commit_is_idempotent(queue):
    txn = transaction_begin(broker="QM1", timeout_ms=60_000)
    message_put(broker="QM1", queue="Q1", messages=msgs("a"), transaction_id=txn.id)
    transaction_commit(transaction_id=txn.id)
    assert transaction_commit(transaction_id=txn.id).state == TransactionState.COMMITTED
    assert browse_all() == [("a", 0)]


def test_rollback_is_idempotent_and_reports_cascade(queue):
    txn = transaction_begin(broker="QM1", timeout_ms=60_000)
    first = transaction_rollback(transaction_id=txn.id)
    assert first.rolled_back_now and first.cascaded == []
    second = transaction_rollback(transaction_id=txn.id)
    assert not second.rolled_back_now
    assert second.transaction.state == TransactionState.ROLLED_BACK


def test_rollback_of_committed_transaction_is_refused(queue):
    txn = transaction_begin(broker="QM1", timeout_ms=60_000)
    message_put(broker="QM1", queue="Q1", messages=msgs("a"), transaction_id=txn.id)
    transaction_commit(transaction_id=txn.id)
    with pytest.raises(TransactionNotActive) as exc:
        transaction_rollback(transaction_id=txn.id)
    assert exc.value.code == "transaction_not_active"
    assert browse_all() == [("a", 0)]


def test_commit_of_rolled_back_transaction_raises_backed_out_with_reason(queue):
    txn = transaction_begin(broker="QM1", timeout_ms=60_000)
    transaction_rollback(transaction_id=txn.id)
    with pytest.raises(TransactionBackedOut) as exc:
        transaction_commit(transaction_id=txn.id)
    assert exc.value.code == "transaction_backed_out"
    assert exc.value.details["reason"] == "client"


def test_operations_on_rolled_back_transaction_fail(queue):
    message_put(broker="QM1", queue="Q1", messages=msgs("a"))
    txn = transaction_begin(broker="QM1", timeout_ms=60_000)
    transaction_rollback(transaction_id=txn.id)
    with pytest.raises(TransactionBackedOut):
        message_put(broker="QM1", queue="Q1", messages=msgs("b"), transaction_id=txn.id)
    with pytest.raises(TransactionBackedOut):
        message_get(broker="QM1", queue="Q1", transaction_id=txn.id)
    assert browse_all() == [("a", 0)]


def test_operations_on_committed_transaction_fail(queue):
    message_put(broker="QM1", queue="Q1", messages=msgs("a"))
    txn = transaction_begin(broker="QM1", timeout_ms=60_000)
    transaction_commit(transaction_id=txn.id)
    with pytest.raises(TransactionNotActive) as exc:
        message_put(broker="QM1", queue="Q1", messages=msgs("b"), transaction_id=txn.id)
    assert exc.value.code == "transaction_not_active"
    with pytest.raises(TransactionNotActive):
        message_get(broker="QM1", queue="Q1", transaction_id=txn.id)
    assert browse_all() == [("a", 0)]


def test_unknown_transaction(queue):
    with pytest.raises(TransactionNotFound) as exc:
        transaction_commit(transaction_id="0" * 32)
    assert exc.value.code == "not_found"
    with pytest.raises(TransactionNotFound):
        message_put(broker="QM1", queue="Q1", messages=msgs("a"), transaction_id="0" * 32)
    assert Message.objects.count() == 0


def test_transaction_of_another_broker_is_refused(queue):
    from brokers.services.brokers import broker_define

    broker_define(name="QM2")
    txn = transaction_begin(broker="QM2", timeout_ms=60_000)
    with pytest.raises(TransactionNotActive):
        message_put(broker="QM1", queue="Q1", messages=msgs("a"), transaction_id=txn.id)
    assert Message.objects.count() == 0
    assert fresh(txn.id).state == TransactionState.ACTIVE


def test_check_of_unlinked_transaction_is_ready_and_of_rolled_back_is_backed_out(queue):
    txn = transaction_begin(broker="QM1", timeout_ms=60_000)
    assert transaction_check(transaction_id=txn.id).result == "ready"
    transaction_rollback(transaction_id=txn.id)
    outcome = transaction_check(transaction_id=txn.id)
    assert outcome.result == "backed_out" and outcome.reason == "client"


# --- timeouts --------------------------------------------------------------------------


def test_time_out_rolls_back_overdue_transactions_with_reason_timeout(queue):
    message_put(broker="QM1", queue="Q1", messages=msgs("kept"))
    txn = transaction_begin(broker="QM1", timeout_ms=500)
    message_put(broker="QM1", queue="Q1", messages=msgs("uncommitted"), transaction_id=txn.id)
    assert bodies(message_get(broker="QM1", queue="Q1", transaction_id=txn.id)) == ["kept"]
    other = transaction_begin(broker="QM1", timeout_ms=60_000)
    wait_past(fresh(txn.id).deadline_at)

    assert transactions_time_out() == [txn.id]
    stored = fresh(txn.id)
    assert stored.state == TransactionState.ROLLED_BACK and stored.reason == "timeout"
    assert fresh(other.id).state == TransactionState.ACTIVE
    # its put vanished, its get came back with its backout count raised
    assert browse_all() == [("kept", 1)]
    assert depth() == {"depth": 1, "uncommitted_puts": 0, "in_flight": 0, "locked": 0}
    # a second pass finds nothing more to do
    assert transactions_time_out() == []


def test_time_out_leaves_transactions_before_their_deadline(queue):
    txn = transaction_begin(broker="QM1", timeout_ms=60_000)
    assert transactions_time_out() == []
    assert fresh(txn.id).state == TransactionState.ACTIVE


def test_zero_timeout_means_no_deadline(queue):
    txn = transaction_begin(broker="QM1", timeout_ms=0)
    assert fresh(txn.id).deadline_at is None
    assert transactions_time_out() == []
    message_put(broker="QM1", queue="Q1", messages=msgs("a"), transaction_id=txn.id)
    transaction_commit(transaction_id=txn.id)
    assert browse_all() == [("a", 0)]


def test_put_on_overdue_transaction_raises_backed_out_and_rolls_it_back(queue):
    txn = transaction_begin(broker="QM1", timeout_ms=1)
    wait_past(txn.deadline_at)
    with pytest.raises(TransactionBackedOut) as exc:
        message_put(broker="QM1", queue="Q1", messages=msgs("late"), transaction_id=txn.id)
    assert exc.value.code == "transaction_backed_out"
    assert exc.value.details["reason"] == "timeout"
    stored = fresh(txn.id)
    assert stored.state == TransactionState.ROLLED_BACK and stored.reason == "timeout"
    assert Message.objects.count() == 0
    assert depth()["uncommitted_puts"] == 0


def test_get_on_overdue_transaction_raises_backed_out_and_restores_earlier_gets(queue):
    message_put(broker="QM1", queue="Q1", messages=msgs("a", "b"))
    txn = transaction_begin(broker="QM1", timeout_ms=500)
    assert bodies(message_get(broker="QM1", queue="Q1", transaction_id=txn.id)) == ["a"]
    wait_past(fresh(txn.id).deadline_at)
    with pytest.raises(TransactionBackedOut) as exc:
        message_get(broker="QM1", queue="Q1", transaction_id=txn.id)
    assert exc.value.details["reason"] == "timeout"
    assert fresh(txn.id).state == TransactionState.ROLLED_BACK
    assert browse_all() == [("a", 1), ("b", 0)]


def test_commit_on_overdue_transaction_raises_backed_out(queue):
    txn = transaction_begin(broker="QM1", timeout_ms=500)
    message_put(broker="QM1", queue="Q1", messages=msgs("a"), transaction_id=txn.id)
    wait_past(fresh(txn.id).deadline_at)
    with pytest.raises(TransactionBackedOut) as exc:
        transaction_commit(transaction_id=txn.id)
    assert exc.value.details["reason"] == "timeout"
    stored = fresh(txn.id)
    assert stored.state == TransactionState.ROLLED_BACK and stored.reason == "timeout"
    assert browse_all() == []
    assert Message.objects.count() == 0


def test_operation_after_time_out_names_the_cause(queue):
    txn = transaction_begin(broker="QM1", timeout_ms=1)
    wait_past(txn.deadline_at)
    assert transactions_time_out() == [txn.id]
    with pytest.raises(TransactionBackedOut) as exc:
        message_put(broker="QM1", queue="Q1", messages=msgs("a"), transaction_id=txn.id)
    assert exc.value.details["reason"] == "timeout"
    assert "timeout" in exc.value.message
    with pytest.raises(TransactionBackedOut):
        transaction_commit(transaction_id=txn.id)
    assert Message.objects.count() == 0


def test_time_out_applies_backout_threshold(broker):
    from brokers.models import DEFAULT_DEAD_LETTER_QUEUE
    from brokers.services.queues import queue_define

    queue_define(broker="QM1", name="Q", backout_threshold=1)
    message_put(broker="QM1", queue="Q", messages=msgs("a"))
    txn = transaction_begin(broker="QM1", timeout_ms=500)
    assert bodies(message_get(broker="QM1", queue="Q", transaction_id=txn.id)) == ["a"]
    wait_past(fresh(txn.id).deadline_at)
    assert transactions_time_out() == [txn.id]
    assert browse_all("Q") == []
    assert browse_all(DEFAULT_DEAD_LETTER_QUEUE) == [("a", 1)]

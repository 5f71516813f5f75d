from __future__ import annotations

import pytest

from brokers.exceptions import QueueFull
from brokers.services.messages import message_get, message_put
from brokers.services.queues import queue_define
from tests.conftest import bodies, msgs
from transactions.manager import transaction_begin, transaction_commit, transaction_rollback


def test_immediate_put_then_get_returns_message_once(queue):
    message_put(broker="QM1", queue="Q1", messages=msgs("a"))
    assert bodies(message_get(broker="QM1", queue="Q1")) == ["a"]
    assert message_get(broker="QM1", queue="Q1").reason == "empty"


def test_uncommitted_put_is_invisible_until_commit(queue):
    txn = transaction_begin(broker="QM1", timeout_ms=60_000)
    message_put(broker="QM1", queue="Q1", messages=msgs("a", "b"), transaction_id=txn.id)
    assert message_get(broker="QM1", queue="Q1").messages == []
    transaction_commit(transaction_id=txn.id)
    assert bodies(message_get(broker="QM1", queue="Q1", batch=10)) == ["a", "b"]


def test_rollback_restores_get_with_backout_count(queue):
    message_put(broker="QM1", queue="Q1", messages=msgs("a"))
    txn = transaction_begin(broker="QM1", timeout_ms=60_000)
    got = message_get(broker="QM1", queue="Q1", transaction_id=txn.id)
    assert bodies(got) == ["a"]
    transaction_rollback(transaction_id=txn.id)
    again = message_get(broker="QM1", queue="Q1")
    assert bodies(again) == ["a"] and again.messages[0].backout_count == 1


def test_max_depth_refuses_whole_batch(broker):
    queue_define(broker="QM1", name="SMALL", max_depth=2)
    with pytest.raises(QueueFull):
        message_put(broker="QM1", queue="SMALL", messages=msgs("a", "b", "c"))
    assert message_get(broker="QM1", queue="SMALL").messages == []

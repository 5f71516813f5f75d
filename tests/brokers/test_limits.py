"""Queue limits and switches: max depth, max message length, put/get inhibited."""

from __future__ import annotations

import pytest

from baton_client.errors import GetInhibited, MessageTooLarge, PutInhibited, QueueFull
from brokers.models import Message, Queue
from brokers.selectors import queue_depths
from brokers.services.brokers import broker_alter, broker_define
from brokers.services.messages import message_browse, message_get, message_put
from brokers.services.queues import queue_alter, queue_define
from tests.conftest import bodies, msgs
from transactions.manager import transaction_begin, transaction_commit, transaction_rollback


def depth(name: str, broker: str = "QM1") -> dict[str, int]:
    q = Queue.objects.get(broker__name=broker, name=name)
    return queue_depths(queue_ids=[q.pk])[q.pk]


def browse_all(queue: str, broker: str = "QM1") -> list[str]:
    return [bytes(m.body).decode() for m in message_browse(broker=broker, queue=queue, limit=1000).messages]


# --- max depth ------------------------------------------------------------------------


def test_put_up_to_max_depth_then_queue_full(broker):
    queue_define(broker="QM1", name="SMALL", max_depth=3)
    message_put(broker="QM1", queue="SMALL", messages=msgs("a", "b"))
    message_put(broker="QM1", queue="SMALL", messages=msgs("c"))
    with pytest.raises(QueueFull) as exc:
        message_put(broker="QM1", queue="SMALL", messages=msgs("d"))
    assert exc.value.code == "queue_full" and exc.value.status == 409
    assert browse_all("SMALL") == ["a", "b", "c"]


def test_queue_full_refuses_whole_batch_and_stores_nothing(broker):
    queue_define(broker="QM1", name="SMALL", max_depth=3)
    message_put(broker="QM1", queue="SMALL", messages=msgs("a"))
    with pytest.raises(QueueFull):
        message_put(broker="QM1", queue="SMALL", messages=msgs("b", "c", "d"))
    assert browse_all("SMALL") == ["a"]
    assert Message.objects.filter(queue__name="SMALL").count() == 1
    assert depth("SMALL") == {"depth": 1, "uncommitted_puts": 0, "in_flight": 0, "locked": 0}
    # the refused batch reserved nothing: two more still fit
    message_put(broker="QM1", queue="SMALL", messages=msgs("b", "c"))
    assert browse_all("SMALL") == ["a", "b", "c"]


def test_queue_full_under_transaction_stores_nothing_and_keeps_transaction(broker):
    queue_define(broker="QM1", name="SMALL", max_depth=2)
    txn = transaction_begin(broker="QM1", timeout_ms=60_000)
    message_put(broker="QM1", queue="SMALL", messages=msgs("a"), transaction_id=txn.id)
    with pytest.raises(QueueFull):
        message_put(broker="QM1", queue="SMALL", messages=msgs("b", "c"), transaction_id=txn.id)
    assert depth("SMALL")["uncommitted_puts"] == 1
    transaction_commit(transaction_id=txn.id)
    assert browse_all("SMALL") == ["a"]


def test_uncommitted_puts_count_toward_max_depth(broker):
    queue_define(broker="QM1", name="SMALL", max_depth=2)
    txn = transaction_begin(broker="QM1", timeout_ms=60_000)
    message_put(broker="QM1", queue="SMALL", messages=msgs("a", "b"), transaction_id=txn.id)
    with pytest.raises(QueueFull):
        message_put(broker="QM1", queue="SMALL", messages=msgs("c"))
    transaction_rollback(transaction_id=txn.id)
    # rolled-back puts give their room back
    message_put(broker="QM1", queue="SMALL", messages=msgs("c", "d"))
    assert browse_all("SMALL") == ["c", "d"]


def test_in_flight_gets_hold_room_until_commit(broker):
    queue_define(broker="QM1", name="SMALL", max_depth=2)
    message_put(broker="QM1", queue="SMALL", messages=msgs("a", "b"))
    txn = transaction_begin(broker="QM1", timeout_ms=60_000)
    message_get(broker="QM1", queue="SMALL", transaction_id=txn.id)
    with pytest.raises(QueueFull):
        message_put(broker="QM1", queue="SMALL", messages=msgs("c"))
    transaction_commit(transaction_id=txn.id)
    message_put(broker="QM1", queue="SMALL", messages=msgs("c"))
    assert browse_all("SMALL") == ["b", "c"]


def test_immediate_gets_free_room(broker):
    queue_define(broker="QM1", name="SMALL", max_depth=2)
    message_put(broker="QM1", queue="SMALL", messages=msgs("a", "b"))
    message_get(broker="QM1", queue="SMALL", batch=2)
    message_put(broker="QM1", queue="SMALL", messages=msgs("c", "d"))
    assert browse_all("SMALL") == ["c", "d"]


def test_lowering_max_depth_below_current_depth_refuses_puts(broker):
    queue_define(broker="QM1", name="SMALL", max_depth=5)
    message_put(broker="QM1", queue="SMALL", messages=msgs("a", "b", "c"))
    queue_alter(broker="QM1", name="SMALL", max_depth=2)
    with pytest.raises(QueueFull):
        message_put(broker="QM1", queue="SMALL", messages=msgs("d"))
    assert browse_all("SMALL") == ["a", "b", "c"]


# --- max message length ---------------------------------------------------------------


def test_queue_max_message_length_is_inclusive(broker):
    queue_define(broker="QM1", name="SHORT", max_message_length=10)
    message_put(broker="QM1", queue="SHORT", messages=msgs("x" * 10))
    with pytest.raises(MessageTooLarge) as exc:
        message_put(broker="QM1", queue="SHORT", messages=msgs("x" * 11))
    assert exc.value.code == "message_too_large" and exc.value.status == 413
    assert browse_all("SHORT") == ["x" * 10]


def test_message_too_large_refuses_whole_batch(broker):
    queue_define(broker="QM1", name="SHORT", max_message_length=5)
    with pytest.raises(MessageTooLarge) as exc:
        message_put(broker="QM1", queue="SHORT", messages=msgs("ok", "also", "far too long"))
    assert exc.value.details.get("index") == 2
    assert Message.objects.filter(queue__name="SHORT").count() == 0
    assert depth("SHORT")["depth"] == 0
    message_put(broker="QM1", queue="SHORT", messages=msgs("ok"))  # no room was taken
    assert browse_all("SHORT") == ["ok"]


def test_message_too_large_under_transaction_stores_nothing(broker):
    queue_define(broker="QM1", name="SHORT", max_message_length=5)
    txn = transaction_begin(broker="QM1", timeout_ms=60_000)
    with pytest.raises(MessageTooLarge):
        message_put(broker="QM1", queue="SHORT", messages=msgs("ok", "too long!"), transaction_id=txn.id)
    transaction_commit(transaction_id=txn.id)
    assert browse_all("SHORT") == []


def test_broker_max_message_length_applies_to_every_queue(db):
    broker_define(name="QM2", max_message_length=8)
    queue_define(broker="QM2", name="BIG", max_message_length=1000)
    message_put(broker="QM2", queue="BIG", messages=msgs("12345678"))
    with pytest.raises(MessageTooLarge):
        message_put(broker="QM2", queue="BIG", messages=msgs("123456789"))
    assert browse_all("BIG", broker="QM2") == ["12345678"]


def test_lowering_broker_max_message_length_limits_existing_queues(broker):
    queue_define(broker="QM1", name="Q", max_message_length=1000)
    broker_alter(name="QM1", max_message_length=4)
    with pytest.raises(MessageTooLarge):
        message_put(broker="QM1", queue="Q", messages=msgs("12345"))
    message_put(broker="QM1", queue="Q", messages=msgs("1234"))
    assert browse_all("Q") == ["1234"]


def test_queue_inherits_broker_max_message_length(db):
    broker_define(name="QM2", max_message_length=6)
    q = queue_define(broker="QM2", name="Q")
    assert q.max_message_length == 6
    with pytest.raises(MessageTooLarge):
        message_put(broker="QM2", queue="Q", messages=msgs("1234567"))


# --- put / get inhibited --------------------------------------------------------------


def test_put_inhibited(broker):
    queue_define(broker="QM1", name="Q", put_enabled=False)
    with pytest.raises(PutInhibited) as exc:
        message_put(broker="QM1", queue="Q", messages=msgs("a"))
    assert exc.value.code == "put_inhibited" and exc.value.status == 409
    assert Message.objects.filter(queue__name="Q").count() == 0


def test_put_inhibited_under_transaction_stores_nothing(broker):
    queue_define(broker="QM1", name="Q", put_enabled=False)
    txn = transaction_begin(broker="QM1", timeout_ms=60_000)
    with pytest.raises(PutInhibited):
        message_put(broker="QM1", queue="Q", messages=msgs("a"), transaction_id=txn.id)
    assert Message.objects.filter(queue__name="Q").count() == 0


def test_put_inhibited_still_allows_gets(broker):
    queue_define(broker="QM1", name="Q")
    message_put(broker="QM1", queue="Q", messages=msgs("a"))
    queue_alter(broker="QM1", name="Q", put_enabled=False)
    assert bodies(message_get(broker="QM1", queue="Q")) == ["a"]


def test_get_inhibited(broker):
    queue_define(broker="QM1", name="Q")
    message_put(broker="QM1", queue="Q", messages=msgs("a"))
    queue_alter(broker="QM1", name="Q", get_enabled=False)
    with pytest.raises(GetInhibited) as exc:
        message_get(broker="QM1", queue="Q")
    assert exc.value.code == "get_inhibited" and exc.value.status == 409
    txn = transaction_begin(broker="QM1", timeout_ms=60_000)
    with pytest.raises(GetInhibited):
        message_get(broker="QM1", queue="Q", transaction_id=txn.id)
    # the message is untouched and puts still work
    message_put(broker="QM1", queue="Q", messages=msgs("b"))
    assert depth("Q") == {"depth": 2, "uncommitted_puts": 0, "in_flight": 0, "locked": 0}
    queue_alter(broker="QM1", name="Q", get_enabled=True)
    assert bodies(message_get(broker="QM1", queue="Q", batch=5)) == ["a", "b"]


def test_reenabling_puts(broker):
    queue_define(broker="QM1", name="Q", put_enabled=False)
    queue_alter(broker="QM1", name="Q", put_enabled=True)
    message_put(broker="QM1", queue="Q", messages=msgs("a"))
    assert browse_all("Q") == ["a"]

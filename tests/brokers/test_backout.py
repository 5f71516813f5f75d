"""Rollback of gets: messages return with their backout count raised, and when the count
reaches the queue's backout threshold they move to the backout queue, or to the broker's
dead-letter queue, with the reason and the source queue recorded."""

from __future__ import annotations

from brokers.models import DEFAULT_DEAD_LETTER_QUEUE, Message, Queue
from brokers.selectors import queue_depths
from brokers.services.brokers import broker_define
from brokers.services.messages import message_browse, message_get, message_put
from brokers.services.queues import queue_define
from tests.conftest import bodies, msgs
from transactions.manager import transaction_begin, transaction_rollback

DLQ = DEFAULT_DEAD_LETTER_QUEUE


def depth(name: str, broker: str = "QM1") -> dict[str, int]:
    q = Queue.objects.get(broker__name=broker, name=name)
    return queue_depths(queue_ids=[q.pk])[q.pk]


def browse(queue: str, broker: str = "QM1") -> list[Message]:
    return list(message_browse(broker=broker, queue=queue, limit=1000).messages)


def get_and_back_out(queue: str, broker: str = "QM1", **options) -> list[str]:
    txn = transaction_begin(broker=broker, timeout_ms=60_000)
    got = message_get(broker=broker, queue=queue, transaction_id=txn.id, **options)
    transaction_rollback(transaction_id=txn.id)
    return bodies(got)


def test_backout_count_grows_with_each_rollback_without_threshold(queue):
    message_put(broker="QM1", queue="Q1", messages=msgs("a"))
    for expected in (1, 2, 3, 4):
        assert get_and_back_out("Q1") == ["a"]
        [m] = browse("Q1")
        assert m.backout_count == expected
    assert browse(DLQ) == []


def test_threshold_moves_message_to_backout_queue(broker):
    queue_define(broker="QM1", name="BOQ")
    queue_define(broker="QM1", name="Q", backout_threshold=2, backout_queue="BOQ")
    put = message_put(broker="QM1", queue="Q", messages=msgs("poison", "fine"))
    msg_id = put.messages[0].msg_id

    assert get_and_back_out("Q") == ["poison"]
    assert [(bytes(m.body).decode(), m.backout_count) for m in browse("Q")] == [("poison", 1), ("fine", 0)]
    assert browse("BOQ") == []

    assert get_and_back_out("Q") == ["poison"]
    assert [bytes(m.body).decode() for m in browse("Q")] == ["fine"]
    [moved] = browse("BOQ")
    assert bytes(moved.body).decode() == "poison"
    assert moved.msg_id == msg_id
    assert moved.backout_count == 2
    assert moved.dead_letter_queue == "Q"
    assert moved.dead_letter_reason  # the reason is recorded
    assert "backout" in moved.dead_letter_reason.lower()
    assert browse(DLQ) == []
    assert depth("Q") == {"depth": 1, "uncommitted_puts": 0, "in_flight": 0, "locked": 0}
    assert depth("BOQ") == {"depth": 1, "uncommitted_puts": 0, "in_flight": 0, "locked": 0}
    # the moved message is gettable from its new queue
    got = message_get(broker="QM1", queue="BOQ")
    assert bodies(got) == ["poison"] and got.messages[0].backout_count == 2


def test_threshold_of_one_moves_on_first_rollback(broker):
    queue_define(broker="QM1", name="BOQ")
    queue_define(broker="QM1", name="Q", backout_threshold=1, backout_queue="BOQ")
    message_put(broker="QM1", queue="Q", messages=msgs("a"))
    assert get_and_back_out("Q") == ["a"]
    assert browse("Q") == []
    assert [(bytes(m.body).decode(), m.backout_count, m.dead_letter_queue) for m in browse("BOQ")] == [("a", 1, "Q")]


def test_threshold_without_backout_queue_moves_to_dead_letter_queue(broker):
    queue_define(broker="QM1", name="Q", backout_threshold=2)
    message_put(broker="QM1", queue="Q", messages=msgs("a"))
    get_and_back_out("Q")
    get_and_back_out("Q")
    assert browse("Q") == []
    [moved] = browse(DLQ)
    assert (bytes(moved.body).decode(), moved.backout_count, moved.dead_letter_queue) == ("a", 2, "Q")
    assert moved.dead_letter_reason


def test_missing_backout_queue_falls_back_to_dead_letter_queue(broker):
    queue_define(broker="QM1", name="Q", backout_threshold=1, backout_queue="NO.SUCH.QUEUE")
    message_put(broker="QM1", queue="Q", messages=msgs("a"))
    get_and_back_out("Q")
    assert browse("Q") == []
    assert [(bytes(m.body).decode(), m.dead_letter_queue) for m in browse(DLQ)] == [("a", "Q")]


def test_broker_with_own_dead_letter_queue_name(db):
    broker_define(name="QM2", dead_letter_queue="QM2.DLQ")
    queue_define(broker="QM2", name="Q", backout_threshold=1)
    message_put(broker="QM2", queue="Q", messages=msgs("a"))
    get_and_back_out("Q", broker="QM2")
    assert browse("Q", broker="QM2") == []
    assert [(bytes(m.body).decode(), m.dead_letter_queue) for m in browse("QM2.DLQ", broker="QM2")] == [("a", "Q")]


def test_batch_rollback_moves_only_messages_over_threshold(broker):
    queue_define(broker="QM1", name="BOQ")
    queue_define(broker="QM1", name="Q", backout_threshold=2, backout_queue="BOQ", delivery_sequence="fifo")
    message_put(broker="QM1", queue="Q", messages=msgs("a", "b"))
    assert get_and_back_out("Q") == ["a"]  # a: 1
    assert get_and_back_out("Q", batch=2) == ["a", "b"]  # a: 2 -> moves, b: 1
    assert [(bytes(m.body).decode(), m.backout_count) for m in browse("Q")] == [("b", 1)]
    assert [(bytes(m.body).decode(), m.backout_count) for m in browse("BOQ")] == [("a", 2)]


def test_moved_messages_keep_their_order_on_the_backout_queue(broker):
    queue_define(broker="QM1", name="BOQ", delivery_sequence="fifo")
    queue_define(broker="QM1", name="Q", backout_threshold=1, backout_queue="BOQ", delivery_sequence="fifo")
    message_put(broker="QM1", queue="BOQ", messages=msgs("already"))
    message_put(broker="QM1", queue="Q", messages=msgs("a", "b", "c"))
    assert get_and_back_out("Q", batch=3) == ["a", "b", "c"]
    assert [bytes(m.body).decode() for m in browse("BOQ")] == ["already", "a", "b", "c"]


def test_moved_message_keeps_its_descriptor(broker):
    queue_define(broker="QM1", name="Q", backout_threshold=1)
    correl = "ef" * 24
    message_put(
        broker="QM1",
        queue="Q",
        messages=msgs("a", correl_id=correl, priority=6, persistence="non_persistent", properties={"p": 1}),
    )
    get_and_back_out("Q")
    [m] = browse(DLQ)
    assert (m.correl_id, m.priority, m.persistent, m.properties) == (correl, 6, False, {"p": 1})


def test_backed_out_message_frees_room_on_source_queue(broker):
    queue_define(broker="QM1", name="BOQ", max_depth=1)
    queue_define(broker="QM1", name="Q", max_depth=1, backout_threshold=1, backout_queue="BOQ")
    message_put(broker="QM1", queue="Q", messages=msgs("a"))
    get_and_back_out("Q")
    message_put(broker="QM1", queue="Q", messages=msgs("b"))  # room was given back on Q
    assert [bytes(m.body).decode() for m in browse("Q")] == ["b"]
    assert [bytes(m.body).decode() for m in browse("BOQ")] == ["a"]


def test_put_disabled_backout_queue_falls_back_to_dead_letter_queue(broker):
    queue_define(broker="QM1", name="BOQ", put_enabled=False)
    queue_define(broker="QM1", name="Q", backout_threshold=1, backout_queue="BOQ")
    message_put(broker="QM1", queue="Q", messages=msgs("a"))
    get_and_back_out("Q")
    assert Message.objects.filter(queue__name="BOQ").count() == 0
    assert [bytes(m.body).decode() for m in browse(DLQ)] == ["a"]


def test_each_backed_out_message_is_journaled_with_its_count(queue):
    from transactions.models import JournalEvent

    message_put(broker="QM1", queue="Q1", messages=msgs("a", "b"))
    txn = transaction_begin(broker="QM1", timeout_ms=60_000)
    message_get(broker="QM1", queue="Q1", transaction_id=txn.id, batch=2)
    transaction_rollback(transaction_id=txn.id)
    events = JournalEvent.objects.filter(transaction_id=txn.id, kind="backout").order_by("id")
    assert [(e.queue, e.broker, e.detail["backout_count"]) for e in events] == [("Q1", "QM1", 1), ("Q1", "QM1", 1)]
    assert [m.backout_count for m in browse("Q1")] == [1, 1]

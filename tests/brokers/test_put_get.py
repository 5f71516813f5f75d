from __future__ import annotations

import pytest

from baton_client.errors import QueueFull
from brokers.models import Message, Queue
from brokers.selectors import queue_depths, queue_reserved_depth
from brokers.services.messages import message_browse, message_get, message_put
from brokers.services.queues import queue_define
from tests.conftest import bodies, msgs
from transactions.manager import transaction_begin, transaction_commit, transaction_rollback
from transactions.models import Transaction, TransactionState


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


# --- helpers --------------------------------------------------------------------------


def depth(name: str, broker: str = "QM1") -> dict[str, int]:
    q = Queue.objects.get(broker__name=broker, name=name)
    return queue_depths(queue_ids=[q.pk])[q.pk]


def browse_all(queue: str, broker: str = "QM1") -> list[str]:
    return [bytes(m.body).decode() for m in message_browse(broker=broker, queue=queue, limit=1000).messages]


def state(txn_id: str) -> str:
    return Transaction.objects.get(pk=txn_id).state


# --- without a unit of work -----------------------------------------------------------


def test_immediate_put_is_visible_at_once_and_stored_once(queue):
    result = message_put(broker="QM1", queue="Q1", messages=msgs("a", "b"))
    assert result.transaction_id is None
    assert [m.put_transaction_id for m in result.messages] == [None, None]
    assert browse_all("Q1") == ["a", "b"]
    assert depth("Q1") == {"depth": 2, "uncommitted_puts": 0, "in_flight": 0, "locked": 0}


def test_immediate_get_is_final_and_frees_depth(queue):
    message_put(broker="QM1", queue="Q1", messages=msgs("a", "b"))
    got = message_get(broker="QM1", queue="Q1")
    assert bodies(got) == ["a"] and got.transaction_id is None
    assert depth("Q1")["depth"] == 1
    assert not Message.objects.filter(msg_id=got.messages[0].msg_id).exists()
    assert browse_all("Q1") == ["b"]


def test_get_from_empty_queue_reports_empty(queue):
    result = message_get(broker="QM1", queue="Q1")
    assert result.messages == [] and result.reason == "empty"


def test_message_descriptor_is_kept(queue):
    correl = "ab" * 24
    message_put(
        broker="QM1",
        queue="Q1",
        messages=msgs(
            "x",
            correl_id=correl,
            priority=7,
            msg_type="request",
            format="text/plain",
            reply_to_queue="REPLY",
            properties={"k": "v"},
            persistence="non_persistent",
        ),
        put_application="app",
    )
    m = message_get(broker="QM1", queue="Q1").messages[0]
    assert (
        m.correl_id,
        m.priority,
        m.msg_type,
        m.format,
        m.reply_to_queue,
        m.properties,
        m.persistent,
        m.put_application,
        m.backout_count,
    ) == (correl, 7, "request", "text/plain", "REPLY", {"k": "v"}, False, "app", 0)
    assert len(m.msg_id) == 48


def test_binary_body_round_trips(queue):
    from brokers.services.message_input import MessageInput

    raw = bytes(range(256))
    message_put(broker="QM1", queue="Q1", messages=[MessageInput(body=raw)])
    assert bytes(message_get(broker="QM1", queue="Q1").messages[0].body) == raw


# --- under a unit of work -------------------------------------------------------------


def test_transactional_put_counts_as_uncommitted_until_commit(queue):
    txn = transaction_begin(broker="QM1", timeout_ms=60_000)
    result = message_put(broker="QM1", queue="Q1", messages=msgs("a"), transaction_id=txn.id)
    assert result.transaction_id == txn.id
    assert depth("Q1") == {"depth": 0, "uncommitted_puts": 1, "in_flight": 0, "locked": 0}
    assert browse_all("Q1") == []
    outcome = transaction_commit(transaction_id=txn.id)
    assert outcome.state == TransactionState.COMMITTED
    assert depth("Q1") == {"depth": 1, "uncommitted_puts": 0, "in_flight": 0, "locked": 0}
    assert browse_all("Q1") == ["a"]


def test_rollback_makes_puts_vanish_and_frees_depth(queue):
    txn = transaction_begin(broker="QM1", timeout_ms=60_000)
    message_put(broker="QM1", queue="Q1", messages=msgs("a", "b"), transaction_id=txn.id)
    outcome = transaction_rollback(transaction_id=txn.id)
    assert outcome.transaction.state == TransactionState.ROLLED_BACK
    assert state(txn.id) == TransactionState.ROLLED_BACK
    assert Transaction.objects.get(pk=txn.id).reason == "client"
    assert Message.objects.filter(queue__name="Q1").count() == 0
    assert depth("Q1") == {"depth": 0, "uncommitted_puts": 0, "in_flight": 0, "locked": 0}
    assert queue_reserved_depth(queue=Queue.objects.get(name="Q1")) == 0


def test_transactional_get_is_in_flight_until_commit_then_removed(queue):
    message_put(broker="QM1", queue="Q1", messages=msgs("a", "b"))
    txn = transaction_begin(broker="QM1", timeout_ms=60_000)
    got = message_get(broker="QM1", queue="Q1", transaction_id=txn.id)
    assert bodies(got) == ["a"] and got.transaction_id == txn.id
    assert depth("Q1") == {"depth": 2, "uncommitted_puts": 0, "in_flight": 1, "locked": 0}
    # another getter cannot see the in-flight message
    assert browse_all("Q1") == ["b"]
    assert bodies(message_get(broker="QM1", queue="Q1", msg_id=got.messages[0].msg_id)) == []
    transaction_commit(transaction_id=txn.id)
    assert depth("Q1") == {"depth": 1, "uncommitted_puts": 0, "in_flight": 0, "locked": 0}
    assert not Message.objects.filter(msg_id=got.messages[0].msg_id).exists()
    assert bodies(message_get(broker="QM1", queue="Q1", batch=5)) == ["b"]


def test_rollback_restores_gets_in_their_place_with_backout_count(queue):
    message_put(broker="QM1", queue="Q1", messages=msgs("a", "b", "c"))
    txn = transaction_begin(broker="QM1", timeout_ms=60_000)
    assert bodies(message_get(broker="QM1", queue="Q1", transaction_id=txn.id, batch=2)) == ["a", "b"]
    transaction_rollback(transaction_id=txn.id)
    assert depth("Q1") == {"depth": 3, "uncommitted_puts": 0, "in_flight": 0, "locked": 0}
    again = message_get(broker="QM1", queue="Q1", batch=3)
    assert bodies(again) == ["a", "b", "c"]
    assert [m.backout_count for m in again.messages] == [1, 1, 0]


def test_put_and_get_in_one_unit_of_work(queue):
    message_put(broker="QM1", queue="Q1", messages=msgs("old"))
    txn = transaction_begin(broker="QM1", timeout_ms=60_000)
    message_put(broker="QM1", queue="Q1", messages=msgs("new"), transaction_id=txn.id)
    # its own uncommitted put is not visible to an ordinary get either
    assert bodies(message_get(broker="QM1", queue="Q1", transaction_id=txn.id, batch=5)) == ["old"]
    transaction_commit(transaction_id=txn.id)
    assert browse_all("Q1") == ["new"]


def test_syncpoint_yes_without_transaction_begins_one(queue):
    result = message_put(broker="QM1", queue="Q1", messages=msgs("a"), syncpoint="yes")
    assert result.transaction_id is not None
    assert state(result.transaction_id) == TransactionState.ACTIVE
    assert browse_all("Q1") == []
    transaction_commit(transaction_id=result.transaction_id)
    assert browse_all("Q1") == ["a"]


def test_get_with_syncpoint_yes_begins_a_unit_of_work(queue):
    message_put(broker="QM1", queue="Q1", messages=msgs("a"))
    got = message_get(broker="QM1", queue="Q1", syncpoint="yes")
    assert bodies(got) == ["a"] and got.transaction_id is not None
    transaction_rollback(transaction_id=got.transaction_id)
    restored = message_get(broker="QM1", queue="Q1")
    assert bodies(restored) == ["a"] and restored.messages[0].backout_count == 1


def test_several_puts_share_one_unit_of_work(queue):
    txn = transaction_begin(broker="QM1", timeout_ms=60_000)
    message_put(broker="QM1", queue="Q1", messages=msgs("a"), transaction_id=txn.id)
    message_put(broker="QM1", queue="Q1", messages=msgs("b", "c"), transaction_id=txn.id)
    assert depth("Q1")["uncommitted_puts"] == 3
    transaction_commit(transaction_id=txn.id)
    assert bodies(message_get(broker="QM1", queue="Q1", batch=5)) == ["a", "b", "c"]


def test_two_units_of_work_are_independent(queue):
    t1 = transaction_begin(broker="QM1", timeout_ms=60_000)
    t2 = transaction_begin(broker="QM1", timeout_ms=60_000)
    message_put(broker="QM1", queue="Q1", messages=msgs("one"), transaction_id=t1.id)
    message_put(broker="QM1", queue="Q1", messages=msgs("two"), transaction_id=t2.id)
    transaction_rollback(transaction_id=t1.id)
    assert browse_all("Q1") == []
    transaction_commit(transaction_id=t2.id)
    assert browse_all("Q1") == ["two"]


# --- syncpoint if_persistent ----------------------------------------------------------


def test_syncpoint_if_persistent_splits_persistent_and_non_persistent(queue):
    result = message_put(
        broker="QM1",
        queue="Q1",
        syncpoint="if_persistent",
        messages=[
            *msgs("p1", persistence="persistent"),
            *msgs("n1", persistence="non_persistent"),
            *msgs("p2", persistence="persistent"),
        ],
    )
    assert result.transaction_id is not None
    by_body = {bytes(m.body).decode(): m for m in result.messages}
    assert by_body["p1"].put_transaction_id == result.transaction_id
    assert by_body["p2"].put_transaction_id == result.transaction_id
    assert by_body["n1"].put_transaction_id is None
    assert browse_all("Q1") == ["n1"]
    assert depth("Q1") == {"depth": 1, "uncommitted_puts": 2, "in_flight": 0, "locked": 0}
    transaction_commit(transaction_id=result.transaction_id)
    assert browse_all("Q1") == ["p1", "n1", "p2"]


def test_syncpoint_if_persistent_with_only_non_persistent_is_immediate(queue):
    result = message_put(
        broker="QM1", queue="Q1", syncpoint="if_persistent", messages=msgs("n1", "n2", persistence="non_persistent")
    )
    assert result.transaction_id is None
    assert browse_all("Q1") == ["n1", "n2"]


def test_syncpoint_if_persistent_follows_queue_default_persistence(broker):
    queue_define(broker="QM1", name="NP", default_persistence="non_persistent")
    queue_define(broker="QM1", name="P", default_persistence="persistent")
    np = message_put(broker="QM1", queue="NP", syncpoint="if_persistent", messages=msgs("n"))
    p = message_put(broker="QM1", queue="P", syncpoint="if_persistent", messages=msgs("p"))
    assert np.transaction_id is None and np.messages[0].persistent is False
    assert browse_all("NP") == ["n"]
    assert p.transaction_id is not None and p.messages[0].persistent is True
    assert browse_all("P") == []
    transaction_commit(transaction_id=p.transaction_id)
    assert browse_all("P") == ["p"]


def test_syncpoint_if_persistent_under_a_named_transaction(queue):
    txn = transaction_begin(broker="QM1", timeout_ms=60_000)
    message_put(
        broker="QM1",
        queue="Q1",
        syncpoint="if_persistent",
        transaction_id=txn.id,
        messages=[
            *msgs("p", persistence="persistent"),
            *msgs("n", persistence="non_persistent"),
        ],
    )
    assert browse_all("Q1") == ["n"]
    transaction_rollback(transaction_id=txn.id)
    assert browse_all("Q1") == ["n"]


# --- delivery sequence ----------------------------------------------------------------


def _put_prioritised(queue: str) -> None:
    for body, priority in [("a1", 1), ("b5", 5), ("c5", 5), ("d0", 0), ("e9", 9), ("f1", 1)]:
        message_put(broker="QM1", queue=queue, messages=msgs(body, priority=priority))


def test_priority_queue_delivers_highest_priority_first_then_put_order(broker):
    queue_define(broker="QM1", name="PRIO", delivery_sequence="priority")
    _put_prioritised("PRIO")
    assert bodies(message_get(broker="QM1", queue="PRIO", batch=10)) == ["e9", "b5", "c5", "a1", "f1", "d0"]


def test_priority_queue_single_gets_follow_same_order(broker):
    queue_define(broker="QM1", name="PRIO", delivery_sequence="priority")
    _put_prioritised("PRIO")
    seen = []
    while (r := message_get(broker="QM1", queue="PRIO")).messages:
        seen += bodies(r)
    assert seen == ["e9", "b5", "c5", "a1", "f1", "d0"]


def test_fifo_queue_ignores_priority(broker):
    queue_define(broker="QM1", name="FIFO", delivery_sequence="fifo")
    _put_prioritised("FIFO")
    assert bodies(message_get(broker="QM1", queue="FIFO", batch=10)) == ["a1", "b5", "c5", "d0", "e9", "f1"]


def test_priority_defaults_to_queue_default_priority(broker):
    queue_define(broker="QM1", name="PRIO", default_priority=4)
    message_put(broker="QM1", queue="PRIO", messages=msgs("low", priority=3))
    message_put(broker="QM1", queue="PRIO", messages=msgs("dflt"))
    message_put(broker="QM1", queue="PRIO", messages=msgs("high", priority=5))
    got = message_get(broker="QM1", queue="PRIO", batch=3)
    assert bodies(got) == ["high", "dflt", "low"]
    assert [m.priority for m in got.messages] == [5, 4, 3]


def test_commit_order_of_transactional_puts_in_put_ordered_queue(queue):
    t1 = transaction_begin(broker="QM1", timeout_ms=60_000)
    t2 = transaction_begin(broker="QM1", timeout_ms=60_000)
    message_put(broker="QM1", queue="Q1", messages=msgs("t1"), transaction_id=t1.id)
    message_put(broker="QM1", queue="Q1", messages=msgs("t2"), transaction_id=t2.id)
    transaction_commit(transaction_id=t2.id)
    transaction_commit(transaction_id=t1.id)
    # read order "put": put order, whatever the commit order
    assert bodies(message_get(broker="QM1", queue="Q1", batch=2)) == ["t1", "t2"]


def test_commit_ordered_queue_delivers_in_commit_order(broker):
    """docs/design.md §2/§4: read order ``commit`` delivers in the order the puts committed."""
    queue_define(broker="QM1", name="CQ", read_order="commit", delivery_sequence="fifo")
    t1 = transaction_begin(broker="QM1", timeout_ms=60_000)
    t2 = transaction_begin(broker="QM1", timeout_ms=60_000)
    message_put(broker="QM1", queue="CQ", messages=msgs("first-put"), transaction_id=t1.id)
    message_put(broker="QM1", queue="CQ", messages=msgs("second-put"), transaction_id=t2.id)
    transaction_commit(transaction_id=t2.id)
    transaction_commit(transaction_id=t1.id)
    assert bodies(message_get(broker="QM1", queue="CQ", batch=2)) == ["second-put", "first-put"]


# --- matching and batches -------------------------------------------------------------


def test_get_by_msg_id(queue):
    put = message_put(broker="QM1", queue="Q1", messages=msgs("a", "b", "c"))
    wanted = put.messages[1].msg_id
    got = message_get(broker="QM1", queue="Q1", msg_id=wanted)
    assert bodies(got) == ["b"] and got.messages[0].msg_id == wanted
    none = message_get(broker="QM1", queue="Q1", msg_id=wanted)
    assert none.messages == [] and none.reason == "no_match"
    assert browse_all("Q1") == ["a", "c"]


def test_get_by_correl_id(queue):
    c1, c2 = "11" * 24, "22" * 24
    message_put(broker="QM1", queue="Q1", messages=msgs("a", correl_id=c1))
    message_put(broker="QM1", queue="Q1", messages=msgs("b", correl_id=c2))
    message_put(broker="QM1", queue="Q1", messages=msgs("c", correl_id=c1))
    assert bodies(message_get(broker="QM1", queue="Q1", correl_id=c2, batch=5)) == ["b"]
    assert bodies(message_get(broker="QM1", queue="Q1", correl_id=c1, batch=5)) == ["a", "c"]
    assert message_get(broker="QM1", queue="Q1", correl_id=c1).reason == "no_match"


def test_get_by_group_id(queue):
    g1, g2 = "aa" * 24, "bb" * 24
    message_put(broker="QM1", queue="Q1", messages=msgs("g1a", "g1b", group_id=g1))
    message_put(broker="QM1", queue="Q1", messages=msgs("g2a", group_id=g2))
    message_put(broker="QM1", queue="Q1", messages=msgs("none"))
    assert bodies(message_get(broker="QM1", queue="Q1", group_id=g2, batch=5)) == ["g2a"]
    assert bodies(message_get(broker="QM1", queue="Q1", group_id=g1, batch=5)) == ["g1a", "g1b"]
    assert browse_all("Q1") == ["none"]


def test_match_does_not_return_uncommitted_or_in_flight(queue):
    c = "cc" * 24
    txn = transaction_begin(broker="QM1", timeout_ms=60_000)
    message_put(broker="QM1", queue="Q1", messages=msgs("unc", correl_id=c), transaction_id=txn.id)
    assert message_get(broker="QM1", queue="Q1", correl_id=c).reason == "no_match"
    transaction_commit(transaction_id=txn.id)
    t2 = transaction_begin(broker="QM1", timeout_ms=60_000)
    assert bodies(message_get(broker="QM1", queue="Q1", correl_id=c, transaction_id=t2.id)) == ["unc"]
    assert message_get(broker="QM1", queue="Q1", correl_id=c).reason == "no_match"


def test_batch_get_takes_at_most_n_in_order(queue):
    message_put(broker="QM1", queue="Q1", messages=msgs("a", "b", "c", "d", "e"))
    assert bodies(message_get(broker="QM1", queue="Q1", batch=3)) == ["a", "b", "c"]
    assert bodies(message_get(broker="QM1", queue="Q1", batch=10)) == ["d", "e"]
    assert message_get(broker="QM1", queue="Q1", batch=10).messages == []


def test_batch_get_under_transaction_and_commit(queue):
    message_put(broker="QM1", queue="Q1", messages=msgs("a", "b", "c", "d"))
    txn = transaction_begin(broker="QM1", timeout_ms=60_000)
    assert bodies(message_get(broker="QM1", queue="Q1", batch=3, transaction_id=txn.id)) == ["a", "b", "c"]
    assert depth("Q1")["in_flight"] == 3
    transaction_commit(transaction_id=txn.id)
    assert depth("Q1") == {"depth": 1, "uncommitted_puts": 0, "in_flight": 0, "locked": 0}
    assert browse_all("Q1") == ["d"]


def test_batch_put_keeps_order_and_ids_unique(queue):
    result = message_put(broker="QM1", queue="Q1", messages=msgs(*[f"m{i}" for i in range(20)]))
    assert len({m.msg_id for m in result.messages}) == 20
    assert bodies(message_get(broker="QM1", queue="Q1", batch=20)) == [f"m{i}" for i in range(20)]


# --- browse ---------------------------------------------------------------------------


def test_browse_never_removes_and_pages_with_cursor(queue):
    message_put(broker="QM1", queue="Q1", messages=msgs("a", "b", "c", "d", "e"))
    first = message_browse(broker="QM1", queue="Q1", limit=2)
    assert [bytes(m.body).decode() for m in first.messages] == ["a", "b"]
    second = message_browse(broker="QM1", queue="Q1", cursor=first.cursor, limit=2)
    assert [bytes(m.body).decode() for m in second.messages] == ["c", "d"]
    third = message_browse(broker="QM1", queue="Q1", cursor=second.cursor, limit=2)
    assert [bytes(m.body).decode() for m in third.messages] == ["e"]
    end = message_browse(broker="QM1", queue="Q1", cursor=third.cursor, limit=2)
    assert end.messages == []
    message_put(broker="QM1", queue="Q1", messages=msgs("f"))
    later = message_browse(broker="QM1", queue="Q1", cursor=end.cursor, limit=2)
    assert [bytes(m.body).decode() for m in later.messages] == ["f"]
    assert depth("Q1")["depth"] == 6
    assert browse_all("Q1") == ["a", "b", "c", "d", "e", "f"]


def test_browse_rejects_a_cursor_it_did_not_give(queue):
    from baton_client.errors import InvalidInput

    with pytest.raises(InvalidInput) as exc:
        message_browse(broker="QM1", queue="Q1", cursor="not-a-cursor!")
    assert exc.value.code == "invalid"

"""Expiry (messages_expire) and restart recovery (brokers_recover)."""

from __future__ import annotations

import time

import pytest
from django.utils import timezone

from baton_client.errors import QueueFull
from brokers.models import Message, Queue
from brokers.selectors import queue_depths
from brokers.services.housekeeping import brokers_recover, housekeeping_run, messages_expire
from brokers.services.messages import message_browse, message_get, message_put
from brokers.services.queues import queue_define
from tests.conftest import bodies, msgs
from transactions.manager import transaction_begin, transaction_commit, transaction_rollback
from transactions.models import Transaction, TransactionState


def depth(name: str = "Q1") -> dict[str, int]:
    q = Queue.objects.get(broker__name="QM1", name=name)
    return queue_depths(queue_ids=[q.pk])[q.pk]


def browse_all(queue: str = "Q1") -> list[str]:
    return [bytes(m.body).decode() for m in message_browse(broker="QM1", queue=queue, limit=1000).messages]


def wait_past(moment, limit_s: float = 10.0) -> None:
    give_up = time.monotonic() + limit_s
    while timezone.now() <= moment:
        assert time.monotonic() < give_up, "the clock did not pass the moment"
        time.sleep(0.001)


# --- expiry ----------------------------------------------------------------------------


def test_expiry_sets_expires_at(queue):
    before = timezone.now()
    m = message_put(broker="QM1", queue="Q1", messages=msgs("a", expiry_ms=60_000)).messages[0]
    assert m.expires_at is not None
    assert before + timezone.timedelta(seconds=59) < m.expires_at
    assert message_put(broker="QM1", queue="Q1", messages=msgs("b")).messages[0].expires_at is None


def test_unexpired_message_is_returned(queue):
    message_put(broker="QM1", queue="Q1", messages=msgs("a", expiry_ms=60_000))
    assert bodies(message_get(broker="QM1", queue="Q1")) == ["a"]


def test_expired_message_is_never_returned(queue):
    message_put(broker="QM1", queue="Q1", messages=msgs("before"))
    doomed = message_put(broker="QM1", queue="Q1", messages=msgs("doomed", expiry_ms=1)).messages[0]
    message_put(broker="QM1", queue="Q1", messages=msgs("after"))
    wait_past(doomed.expires_at)
    assert browse_all() == ["before", "after"]
    assert message_get(broker="QM1", queue="Q1", msg_id=doomed.msg_id).messages == []
    txn = transaction_begin(broker="QM1", timeout_ms=60_000)
    assert bodies(message_get(broker="QM1", queue="Q1", batch=5, transaction_id=txn.id)) == ["before", "after"]
    transaction_commit(transaction_id=txn.id)
    assert message_get(broker="QM1", queue="Q1").reason == "empty"


def test_messages_expire_removes_expired_and_frees_depth(broker):
    queue_define(broker="QM1", name="SMALL", max_depth=2)
    message_put(broker="QM1", queue="SMALL", messages=msgs("stays"))
    doomed = message_put(broker="QM1", queue="SMALL", messages=msgs("doomed", expiry_ms=1)).messages[0]
    wait_past(doomed.expires_at)
    # still counted (and still taking room) until the sweeper runs
    assert depth("SMALL")["depth"] == 2
    with pytest.raises(QueueFull):
        message_put(broker="QM1", queue="SMALL", messages=msgs("new"))
    assert messages_expire() == 1
    assert not Message.objects.filter(msg_id=doomed.msg_id).exists()
    assert depth("SMALL") == {"depth": 1, "uncommitted_puts": 0, "in_flight": 0, "locked": 0}
    message_put(broker="QM1", queue="SMALL", messages=msgs("new"))
    assert browse_all("SMALL") == ["stays", "new"]
    assert messages_expire() == 0


def test_messages_expire_respects_limit(queue):
    put = message_put(broker="QM1", queue="Q1", messages=msgs("a", "b", "c", expiry_ms=1))
    wait_past(put.messages[-1].expires_at)
    assert messages_expire(limit=2) == 2
    assert messages_expire(limit=2) == 1
    assert Message.objects.count() == 0
    assert depth()["depth"] == 0


def test_messages_expire_leaves_messages_held_by_a_unit_of_work(queue):
    txn = transaction_begin(broker="QM1", timeout_ms=60_000)
    unc = message_put(broker="QM1", queue="Q1", messages=msgs("unc", expiry_ms=500), transaction_id=txn.id).messages[0]
    message_put(broker="QM1", queue="Q1", messages=msgs("flying", expiry_ms=500))
    getter = transaction_begin(broker="QM1", timeout_ms=60_000)
    assert bodies(message_get(broker="QM1", queue="Q1", transaction_id=getter.id)) == ["flying"]
    wait_past(unc.expires_at)
    assert messages_expire() == 0
    assert depth() == {"depth": 1, "uncommitted_puts": 1, "in_flight": 1, "locked": 0}
    transaction_rollback(transaction_id=getter.id)
    transaction_commit(transaction_id=txn.id)
    # both are now expired and unheld: never returned, and swept
    assert message_get(broker="QM1", queue="Q1", batch=5).messages == []
    assert messages_expire() == 2
    assert depth()["depth"] == 0


def test_housekeeping_run_times_out_and_expires(queue):
    put = message_put(broker="QM1", queue="Q1", messages=msgs("x", expiry_ms=1)).messages[0]
    txn = transaction_begin(broker="QM1", timeout_ms=1)
    wait_past(max(put.expires_at, txn.deadline_at))
    assert housekeeping_run() == {
        "timed_out": 1,
        "unlocked": 0,
        "expired": 1,
        "dedup_keys_forgotten": 0,
        "releases_folded": 1,  # the expired message's room, given back to a release row
    }
    assert Transaction.objects.get(pk=txn.id).reason == "timeout"
    assert Message.objects.count() == 0
    assert Queue.objects.get(name="Q1").reserved_depth == 0  # folded: the queue's own counter again


# --- restart recovery ------------------------------------------------------------------


def test_recover_discards_non_persistent_and_keeps_persistent(queue):
    message_put(
        broker="QM1",
        queue="Q1",
        messages=[
            *msgs("p1", persistence="persistent"),
            *msgs("n1", persistence="non_persistent"),
            *msgs("p2", persistence="persistent"),
            *msgs("n2", persistence="non_persistent"),
        ],
    )
    result = brokers_recover()
    assert result["discarded"] == 2 and result["rolled_back"] == 0
    assert browse_all() == ["p1", "p2"]
    assert depth() == {"depth": 2, "uncommitted_puts": 0, "in_flight": 0, "locked": 0}
    assert all(m.persistent for m in Message.objects.all())


def test_recover_uses_queue_default_persistence(broker):
    queue_define(broker="QM1", name="NP", default_persistence="non_persistent")
    message_put(broker="QM1", queue="NP", messages=msgs("n"))
    message_put(broker="QM1", queue="NP", messages=msgs("p", persistence="persistent"))
    brokers_recover()
    assert browse_all("NP") == ["p"]


def test_recover_frees_room_of_discarded_messages(broker):
    queue_define(broker="QM1", name="SMALL", max_depth=2)
    message_put(broker="QM1", queue="SMALL", messages=msgs("n1", "n2", persistence="non_persistent"))
    brokers_recover()
    message_put(broker="QM1", queue="SMALL", messages=msgs("a", "b"))
    assert browse_all("SMALL") == ["a", "b"]


def test_recover_rolls_back_open_transactions(queue):
    message_put(broker="QM1", queue="Q1", messages=msgs("got-p", persistence="persistent"))
    message_put(broker="QM1", queue="Q1", messages=msgs("got-n", persistence="non_persistent"))
    t1 = transaction_begin(broker="QM1", timeout_ms=60_000)
    message_put(broker="QM1", queue="Q1", messages=msgs("unc"), transaction_id=t1.id)
    assert bodies(message_get(broker="QM1", queue="Q1", batch=2, transaction_id=t1.id)) == ["got-p", "got-n"]
    t2 = transaction_begin(broker="QM1", timeout_ms=60_000)
    done = transaction_begin(broker="QM1", timeout_ms=60_000)
    transaction_commit(transaction_id=done.id)

    result = brokers_recover()
    assert result["rolled_back"] == 2
    for txn in (t1, t2):
        stored = Transaction.objects.get(pk=txn.id)
        assert stored.state == TransactionState.ROLLED_BACK and stored.reason
    assert Transaction.objects.get(pk=done.id).state == TransactionState.COMMITTED
    # the uncommitted put vanished, the gotten persistent message is back, the
    # non-persistent one was discarded
    msgs_left = list(message_browse(broker="QM1", queue="Q1").messages)
    assert [(bytes(m.body).decode(), m.backout_count) for m in msgs_left] == [("got-p", 1)]
    assert depth() == {"depth": 1, "uncommitted_puts": 0, "in_flight": 0, "locked": 0}
    assert brokers_recover() == {"rolled_back": 0, "discarded": 0}

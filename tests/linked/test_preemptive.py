"""Pre-emptive gets and linked transactions (docs/design.md §5)."""

from __future__ import annotations

import pytest

from baton_client.errors import OptionsConflict
from brokers.selectors import queue_depths
from brokers.services.messages import message_get, message_put
from brokers.services.queues import queue_define
from tests.conftest import bodies, msgs
from baton_client.errors import TransactionBackedOut, TransactionNotActive
from transactions.manager import (
    transaction_begin,
    transaction_check,
    transaction_commit,
    transaction_rollback,
    transactions_time_out,
)
from transactions.journal import journal_messages
from transactions.models import JournalEvent, Link, Transaction
from transactions.selectors import transaction_neighbours

pytestmark = pytest.mark.linked


def begin(timeout_ms: int = 60_000) -> str:
    return transaction_begin(broker="QM1", timeout_ms=timeout_ms).id


def state(txn_id: str) -> str:
    return Transaction.objects.get(pk=txn_id).state


def put_uncommitted(*texts: str, queue: str = "Q1") -> str:
    producer = begin()
    message_put(broker="QM1", queue=queue, messages=msgs(*texts), transaction_id=producer)
    return producer


def pget(txn: str, queue: str = "Q1", batch: int = 1):
    return message_get(broker="QM1", queue=queue, transaction_id=txn, preemptive=True, batch=batch)


def test_preemptive_get_takes_uncommitted_put_and_links(queue):
    producer = put_uncommitted("m1")
    assert message_get(broker="QM1", queue="Q1", syncpoint="yes").messages == []  # ordinary get: invisible
    consumer = begin()
    assert bodies(pget(consumer)) == ["m1"]
    assert transaction_neighbours(transaction_id=consumer) == ([producer], [])
    assert transaction_neighbours(transaction_id=producer) == ([], [consumer])
    assert JournalEvent.objects.filter(kind="link", transaction_id=consumer).count() == 1


def test_preemptive_gets_mark_both_sides_once_and_link_once_per_message(queue):
    producer = begin()
    message_put(broker="QM1", queue="Q1", messages=msgs("m1", "m2", "m3"), transaction_id=producer)
    other = put_uncommitted("m4")
    consumer = begin()
    assert bodies(pget(consumer)) == ["m1"]
    assert bodies(pget(consumer, batch=3)) == ["m2", "m3", "m4"]
    for txn in (producer, other, consumer):
        assert Transaction.objects.get(pk=txn).marks == ["linked"]
    links = sorted(Link.objects.filter(downstream_id=consumer).values_list("upstream_id", "resource_ref"))
    assert [upstream for upstream, _ in links] == sorted([producer] * 3 + [other])
    assert len({ref for _, ref in links}) == 4
    # one link event per message, a step's several in one row (transactions.journal.journal_step_event)
    rows = list(JournalEvent.objects.filter(kind="link", transaction_id=consumer).order_by("id").values())
    events = [event for row in rows for event in journal_messages(row)]
    assert sorted((event["detail"]["upstream"], event["msg_id"]) for event in events) == links
    assert [row["count"] for row in rows] == [1, 3]


def test_preemptive_get_never_returns_own_put(queue):
    txn = put_uncommitted("mine")
    assert pget(txn).messages == []


def test_preemptive_needs_unit_of_work(queue):
    with pytest.raises(OptionsConflict):
        message_get(broker="QM1", queue="Q1", preemptive=True)


def test_held_commit_released_by_upstream_commit(queue):
    producer = put_uncommitted("m1")
    consumer = begin()
    pget(consumer)
    outcome = transaction_commit(transaction_id=consumer)
    assert outcome.state == "commit_held" and outcome.waiting_on == [producer]
    with pytest.raises(TransactionNotActive):
        message_put(broker="QM1", queue="Q1", messages=msgs("late"), transaction_id=consumer)
    assert transaction_check(transaction_id=consumer).result == "pending"
    transaction_commit(transaction_id=producer)
    assert state(consumer) == "committed" and state(producer) == "committed"
    assert queue_depths(queue_ids=[queue.pk])[queue.pk]["depth"] == 0
    assert JournalEvent.objects.filter(kind="release", transaction_id=consumer).count() == 1
    # the message was put and consumed in one committed group: never available
    assert not JournalEvent.objects.filter(kind="backout").exists()


def test_held_commit_backed_out_by_upstream_rollback(queue):
    producer = put_uncommitted("m1")
    consumer = begin()
    pget(consumer)
    message_put(broker="QM1", queue="Q1", messages=msgs("derived"), transaction_id=consumer)
    transaction_commit(transaction_id=consumer)
    outcome = transaction_rollback(transaction_id=producer)
    assert outcome.cascaded == [consumer]
    consumer_row = Transaction.objects.get(pk=consumer)
    assert consumer_row.state == "rolled_back" and consumer_row.reason == f"cascade from {producer}"
    assert transaction_check(transaction_id=consumer).result == "backed_out"
    with pytest.raises(TransactionBackedOut) as err:
        transaction_commit(transaction_id=consumer)
    assert producer in err.value.message
    assert queue_depths(queue_ids=[queue.pk])[queue.pk] == {
        "depth": 0,
        "uncommitted_puts": 0,
        "in_flight": 0,
        "locked": 0,
    }


def test_consumer_commits_at_once_when_producer_already_committed(queue):
    producer = put_uncommitted("m1")
    consumer = begin()
    pget(consumer)
    transaction_commit(transaction_id=producer)
    assert transaction_check(transaction_id=consumer).result == "ready"
    assert transaction_commit(transaction_id=consumer).state == "committed"
    assert message_get(broker="QM1", queue="Q1").messages == []


def test_downstream_rollback_leaves_upstream_and_message_gettable_again(queue):
    producer = put_uncommitted("m1")
    consumer = begin()
    pget(consumer)
    transaction_rollback(transaction_id=consumer)
    assert state(producer) == "active"
    assert not Link.objects.filter(downstream_id=consumer).exists()
    again = begin()
    got = pget(again)
    assert bodies(got) == ["m1"] and got.messages[0].backout_count == 1
    transaction_commit(transaction_id=producer)
    assert transaction_commit(transaction_id=again).state == "committed"


def test_chain_of_twelve_commits_from_the_head(broker):
    for i in range(13):
        queue_define(broker="QM1", name=f"S{i}")
    chain = [put_uncommitted("x", queue="S0")]
    for i in range(1, 13):
        txn = begin()
        got = pget(txn, queue=f"S{i - 1}")
        assert len(got.messages) == 1
        message_put(broker="QM1", queue=f"S{i}", messages=msgs(f"x{i}"), transaction_id=txn)
        chain.append(txn)
    for txn in reversed(chain[1:]):
        assert transaction_commit(transaction_id=txn).state == "commit_held"
    transaction_commit(transaction_id=chain[0])
    assert all(state(t) == "committed" for t in chain)
    assert bodies(message_get(broker="QM1", queue="S12")) == ["x12"]


def test_chain_rollback_cascades_transitively(broker):
    for i in range(11):
        queue_define(broker="QM1", name=f"S{i}")
    chain = [put_uncommitted("x", queue="S0")]
    for i in range(1, 11):
        txn = begin()
        pget(txn, queue=f"S{i - 1}")
        message_put(broker="QM1", queue=f"S{i}", messages=msgs("y"), transaction_id=txn)
        chain.append(txn)
    outcome = transaction_rollback(transaction_id=chain[0])
    assert sorted(outcome.cascaded) == sorted(chain[1:])
    assert all(Transaction.objects.get(pk=t).reason == f"cascade from {chain[0]}" for t in chain[1:])
    for i in range(11):
        assert message_get(broker="QM1", queue=f"S{i}", syncpoint="yes", preemptive=True).messages == []


def test_fan_in_waits_for_every_producer(queue):
    p1, p2 = put_uncommitted("a"), put_uncommitted("b")
    consumer = begin()
    assert sorted(bodies(pget(consumer, batch=2))) == ["a", "b"]
    assert sorted(transaction_commit(transaction_id=consumer).waiting_on) == sorted([p1, p2])
    transaction_commit(transaction_id=p1)
    assert state(consumer) == "commit_held"
    assert transaction_check(transaction_id=consumer).waiting_on == [p2]
    transaction_commit(transaction_id=p2)
    assert state(consumer) == "committed"


def test_fan_out_rollback_backs_out_every_consumer(queue):
    producer = put_uncommitted("a", "b", "c")
    consumers = [begin() for _ in range(3)]
    for c in consumers:
        assert len(pget(c).messages) == 1
    transaction_commit(transaction_id=consumers[0])
    outcome = transaction_rollback(transaction_id=producer)
    assert sorted(outcome.cascaded) == sorted(consumers)


def test_cycle_commits_as_one_group_once_all_asked(broker):
    queue_define(broker="QM1", name="A")
    queue_define(broker="QM1", name="B")
    t1, t2 = put_uncommitted("from1", queue="A"), put_uncommitted("from2", queue="B")
    pget(t1, queue="B")
    pget(t2, queue="A")
    assert transaction_commit(transaction_id=t1).state == "commit_held"
    assert transaction_commit(transaction_id=t2).state == "committed"
    assert state(t1) == "committed"
    assert message_get(broker="QM1", queue="A").messages == [] and message_get(broker="QM1", queue="B").messages == []


def test_cycle_rollback_backs_out_both(broker):
    queue_define(broker="QM1", name="A")
    queue_define(broker="QM1", name="B")
    t1, t2 = put_uncommitted("from1", queue="A"), put_uncommitted("from2", queue="B")
    pget(t1, queue="B")
    pget(t2, queue="A")
    transaction_commit(transaction_id=t1)
    outcome = transaction_rollback(transaction_id=t2)
    assert outcome.cascaded == [t1]
    assert state(t1) == "rolled_back"


def test_upstream_timeout_cascades(queue):
    producer = put_uncommitted("m")
    consumer = begin()
    pget(consumer)
    transaction_commit(transaction_id=consumer)
    # move the producer's deadline into the past instead of sleeping until it passes
    Transaction.objects.filter(pk=producer).update(deadline_at="2000-01-01T00:00:00Z")
    assert transactions_time_out() == [producer]
    assert Transaction.objects.get(pk=producer).reason == "timeout"
    assert Transaction.objects.get(pk=consumer).reason == f"cascade from {producer}"
    with pytest.raises(TransactionBackedOut):
        transaction_commit(transaction_id=consumer)


def test_commit_wait_returns_committed_when_upstream_commits_meanwhile(transactional_db, queue):
    import threading

    producer = put_uncommitted("m")
    consumer = begin()
    pget(consumer)
    transaction_commit(transaction_id=consumer)
    ready = threading.Event()
    result = {}

    def waiter():
        from django.db import connection

        ready.set()
        try:
            result["state"] = transaction_commit(transaction_id=consumer, wait=20).state
        finally:
            connection.close()

    t = threading.Thread(target=waiter)
    t.start()
    ready.wait(10)
    transaction_commit(transaction_id=producer)
    t.join(30)
    assert not t.is_alive(), "the held commit's wait did not end"
    assert result["state"] == "committed"


def test_transaction_graph_shows_nodes_edges_and_states(queue):
    from transactions.selectors import transaction_graph

    producer = put_uncommitted("m1", "m2")
    c1, c2 = begin(), begin()
    pget(c1)
    pget(c2)
    transaction_commit(transaction_id=c1)
    graph = transaction_graph(broker="QM1")
    states = {n["id"]: n["state"] for n in graph["nodes"]}
    assert states == {producer: "active", c1: "commit_held", c2: "active"}
    assert sorted((e["upstream"], e["downstream"]) for e in graph["edges"]) == sorted([(producer, c1), (producer, c2)])
    transaction_rollback(transaction_id=producer)
    states = {n["id"]: n["state"] for n in transaction_graph(broker="QM1")["nodes"]}
    assert set(states.values()) == {"rolled_back"}

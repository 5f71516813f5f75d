"""PostgreSQL: a rollback is one call of ``baton_rollback_v1`` (brokers migration 0021), one
round trip with its step's ``BEGIN`` and ``COMMIT``; for a unit of work with marks or links,
or gets from a queue with a backout threshold, the call changes nothing and the transaction
manager's statements and resource managers roll it back, answering as they always did. What
the one call writes is compared with what the managers write for the same unit of work.
Round trips are counted from libpq's trace, as in test_round_trips.py."""

from __future__ import annotations

import time

import pytest
from django.db import connection

from brokers.models import Message, Queue
from brokers.selectors import queue_reserved_depth
from brokers.services.locks import lock_complete
from brokers.services.messages import message_get, message_put
from brokers.services.queues import queue_define
from tests.helpers import wakeup_listener
from tests.conftest import bodies, msgs
from tests.transactions.test_round_trips import _round_trips, _warm
from baton_client.errors import TransactionNotActive
from transactions.exceptions import TransactionNotFound
from transactions.manager import transaction_begin, transaction_commit, transaction_rollback
from transactions.models import JournalEvent, Transaction

pytestmark = [
    pytest.mark.django_db(transaction=True),  # the steps drive their own transactions, as in the servers
    pytest.mark.skipif(connection.vendor != "postgresql", reason="the one-round-trip rollback is PostgreSQL's"),
]


def _warm_rollbacks() -> None:
    """The rollback's statements prepared on this connection, as in a server after its first
    operations (and ``_warm``'s); leaves the queue empty."""
    _warm()
    transaction_rollback(transaction_id=_put_uncommitted("w"))
    message_put(broker="QM1", queue="Q1", messages=msgs("w"))
    got = message_get(broker="QM1", queue="Q1", syncpoint="yes")
    transaction_rollback(transaction_id=got.transaction_id)
    transaction_commit(transaction_id=message_get(broker="QM1", queue="Q1", syncpoint="yes").transaction_id)


def _put_uncommitted(*bodies_: str, queue: str = "Q1") -> str:
    return message_put(broker="QM1", queue=queue, messages=msgs(*bodies_), syncpoint="yes").transaction_id


def _journal(transaction_id: str) -> list[tuple]:
    return list(
        JournalEvent.objects.filter(transaction_id=transaction_id)
        .order_by("id")
        .values_list("kind", "broker", "queue", "msg_id", "detail", "count")
    )


def test_a_rollback_of_puts_removes_them_gives_their_room_back_and_records_it_in_one_round_trip(broker):
    queue_define(broker="QM1", name="Q1", max_depth=2)
    _warm_rollbacks()
    txn = _put_uncommitted("a", "b")
    q = Queue.objects.get(name="Q1")
    assert queue_reserved_depth(queue=q) == 2
    outcome, trips = _round_trips(lambda: transaction_rollback(transaction_id=txn))
    assert (outcome.transaction.state, outcome.cascaded, outcome.rolled_back_now, trips) == (
        "rolled_back",
        [],
        True,
        1,
    )
    assert (outcome.transaction.reason, outcome.transaction.resolved_at is not None) == ("client", True)
    row = Transaction.objects.get(pk=txn)
    assert (row.state, row.reason, row.cause_id, row.resolved_at == outcome.transaction.resolved_at) == (
        "rolled_back",
        "client",
        None,
        True,
    )
    assert not Message.objects.filter(queue=q).exists()
    assert queue_reserved_depth(queue=q) == 0
    assert _journal(txn)[-1] == ("rollback", "QM1", "", "", {"reason": "client"}, 1)
    message_put(broker="QM1", queue="Q1", messages=msgs("c", "d"))  # the room is back: the queue is not full


def test_a_rollback_of_gets_returns_them_backed_out_once_in_one_round_trip(queue):
    _warm_rollbacks()
    message_put(broker="QM1", queue="Q1", messages=msgs("a", "b", "c"))
    got = message_get(broker="QM1", queue="Q1", batch=2, syncpoint="yes")
    outcome, trips = _round_trips(lambda: transaction_rollback(transaction_id=got.transaction_id, reason="nope"))
    assert (outcome.transaction.state, trips) == ("rolled_back", 1)
    again = message_get(broker="QM1", queue="Q1", batch=5)
    assert [(m.body, m.backout_count) for m in again.messages] == [(b"a", 1), (b"b", 1), (b"c", 0)]
    ids = [m.msg_id for m in got.messages]
    assert _journal(got.transaction_id)[-3:] == [
        ("backout", "QM1", "Q1", ids[0], {"backout_count": 1}, 1),
        ("backout", "QM1", "Q1", ids[1], {"backout_count": 1}, 1),
        ("rollback", "QM1", "", "", {"reason": "nope"}, 1),
    ]


def _scenario(first: str, second: str) -> list[str]:
    """Units of work of every shape the one round trip takes, on queues ``first`` and
    ``second``: puts on both, gets from both with a put, a peek-locked message completed
    under one (it keeps its lock) with a get, one that did nothing. Returns their ids."""
    message_put(broker="QM1", queue=first, messages=msgs("g1", "g2", "g3"))
    message_put(broker="QM1", queue=second, messages=msgs("h1", "l1"))
    units = [transaction_begin(broker="QM1", timeout_ms=60_000).id for _ in range(4)]
    message_put(broker="QM1", queue=first, messages=msgs("p1", "p2"), transaction_id=units[0])
    message_put(broker="QM1", queue=second, messages=msgs("p3"), transaction_id=units[0])
    message_get(broker="QM1", queue=first, batch=2, transaction_id=units[1])
    message_get(broker="QM1", queue=second, transaction_id=units[1])
    message_put(broker="QM1", queue=first, messages=msgs("p4"), transaction_id=units[1])
    locked = message_get(broker="QM1", queue=second, mode="peek_lock")
    lock_complete(token=locked.messages[0].lock_token, transaction_id=units[2])
    message_get(broker="QM1", queue=first, transaction_id=units[2])
    return units


def _rolled_back(first: str, second: str, *, managers: bool) -> tuple[list[int], tuple]:
    """The scenario's units of work rolled back (by the managers when ``managers``: each is
    given a mark no manager acts on, so the function leaves it to them); their round trips,
    and what they left, with queue names and message ids replaced by what the two runs
    share."""
    units = _scenario(first, second)
    bodies_by_id = dict(Message.objects.values_list("msg_id", "body"))  # every message is still there
    same = {first: "first", second: "second", "": ""}
    trips = []
    for unit in units:
        if managers:
            Transaction.objects.filter(pk=unit).update(marks=["noted"])
        trips.append(_round_trips(lambda unit=unit: transaction_rollback(transaction_id=unit))[1])
    messages = sorted(
        (same[name], bytes(body), backouts, deliveries, token is not None, got is None)
        for name, body, backouts, deliveries, token, got in Message.objects.filter(
            queue__name__in=[first, second]
        ).values_list("queue__name", "body", "backout_count", "delivery_count", "lock_token", "get_transaction_id")
    )
    rows = [Transaction.objects.values_list("state", "reason", "cause_id").get(pk=unit) for unit in units]
    journal = [
        [
            (kind, broker, same[queue], bodies_by_id.get(msg_id, msg_id), detail, count)
            for kind, broker, queue, msg_id, detail, count in _journal(unit)
            if kind in ("backout", "rollback")
        ]
        for unit in units
    ]
    room = {same[q.name]: queue_reserved_depth(queue=q) for q in Queue.objects.filter(name__in=[first, second])}
    return trips, (messages, rows, journal, room)


def test_what_the_one_call_writes_is_what_the_managers_write(queue):
    for name in ("Q2", "C1", "C2"):
        queue_define(broker="QM1", name=name)
    _warm_rollbacks()
    called_trips, called = _rolled_back("Q1", "Q2", managers=False)
    managers_trips, managed = _rolled_back("C1", "C2", managers=True)
    assert called_trips == [1, 1, 1, 1] and all(trips > 1 for trips in managers_trips)
    assert called == managed
    messages, rows, journal, room = called
    assert messages == [
        ("first", b"g1", 1, 1, False, True),
        ("first", b"g2", 1, 1, False, True),
        ("first", b"g3", 1, 1, False, True),
        ("second", b"h1", 1, 1, False, True),
        ("second", b"l1", 0, 1, True, True),  # completed under the unit of work: its lock again
    ]
    assert rows == [("rolled_back", "client", None)] * 4
    rolled = ("rollback", "QM1", "", "", {"reason": "client"}, 1)
    assert journal == [
        [rolled],
        [
            ("backout", "QM1", "first", b"g1", {"backout_count": 1}, 1),
            ("backout", "QM1", "first", b"g2", {"backout_count": 1}, 1),
            ("backout", "QM1", "second", b"h1", {"backout_count": 1}, 1),
            rolled,
        ],
        [("backout", "QM1", "first", b"g3", {"backout_count": 1}, 1), rolled],
        [rolled],
    ]
    assert room == {"first": 3, "second": 2}


def test_the_rollback_notifies_the_queues_its_gets_return_to_and_the_unit_of_work(queue):
    """Getters waiting in other processes hear of the returned messages through PostgreSQL's
    NOTIFY, sent after the rollback by this process's publisher."""
    _warm_rollbacks()
    message_put(broker="QM1", queue="Q1", messages=msgs("a"))
    got = message_get(broker="QM1", queue="Q1", syncpoint="yes")
    q = Queue.objects.get(name="Q1")
    target = f"txn:{got.transaction_id}"
    with wakeup_listener() as listener:
        transaction_rollback(transaction_id=got.transaction_id)
        # the warm-up's rollbacks may still be published first (the publisher sends after
        # the commit, coalescing): hear until the notice naming this unit of work
        heard: list[str] = []
        deadline = time.monotonic() + 5
        while target not in heard and time.monotonic() < deadline:
            for notice in listener.notifies(timeout=max(0.0, deadline - time.monotonic()), stop_after=1):
                heard = notice.payload.split()
    assert set(heard) >= {f"queue:{q.pk}", target}


def test_a_rolled_back_unit_of_work_answers_again_without_a_second_rollback(queue):
    _warm_rollbacks()
    txn = _put_uncommitted("a")
    transaction_rollback(transaction_id=txn)
    again = transaction_rollback(transaction_id=txn)
    assert (again.transaction.state, again.rolled_back_now) == ("rolled_back", False)
    assert [e[0] for e in _journal(txn)].count("rollback") == 1


def test_a_committed_unit_of_work_is_refused_and_an_unknown_one_not_found(queue):
    _warm_rollbacks()
    txn = _put_uncommitted("a")
    transaction_commit(transaction_id=txn)
    with pytest.raises(TransactionNotActive):
        transaction_rollback(transaction_id=txn)
    assert bodies(message_get(broker="QM1", queue="Q1")) == ["a"]
    with pytest.raises(TransactionNotFound):
        transaction_rollback(transaction_id="f" * 48)


def test_an_overdue_unit_of_work_is_rolled_back_for_the_reason_given(queue, clock):
    _warm_rollbacks()
    txn = transaction_begin(broker="QM1", timeout_ms=1_000)
    message_put(broker="QM1", queue="Q1", messages=msgs("a"), transaction_id=txn.id)
    clock.advance(seconds=2)
    outcome, trips = _round_trips(lambda: transaction_rollback(transaction_id=txn.id))
    assert (outcome.transaction.state, outcome.transaction.reason, trips) == ("rolled_back", "client", 1)
    assert not Message.objects.exists()


def test_a_linked_producer_cascades_to_its_consumer_by_the_managers(queue):
    _warm_rollbacks()
    producer = _put_uncommitted("a")
    consumer = message_get(broker="QM1", queue="Q1", syncpoint="yes", preemptive=True)
    assert bodies(consumer) == ["a"]
    outcome, trips = _round_trips(lambda: transaction_rollback(transaction_id=producer))
    assert (outcome.cascaded, trips > 1) == ([consumer.transaction_id], True)
    assert Transaction.objects.get(pk=consumer.transaction_id).reason == f"cascade from {producer}"
    assert not Message.objects.exists()


def test_gets_from_a_queue_with_a_backout_threshold_are_moved_by_the_managers(broker):
    queue_define(broker="QM1", name="BACKOUT")
    queue_define(broker="QM1", name="Q1", backout_threshold=1, backout_queue="BACKOUT")
    _warm()
    message_put(broker="QM1", queue="Q1", messages=msgs("a"))
    got = message_get(broker="QM1", queue="Q1", syncpoint="yes")
    outcome, trips = _round_trips(lambda: transaction_rollback(transaction_id=got.transaction_id))
    assert (outcome.transaction.state, trips > 1) == ("rolled_back", True)  # one call, then the managers
    assert bodies(message_get(broker="QM1", queue="Q1")) == []
    assert bodies(message_get(broker="QM1", queue="BACKOUT")) == ["a"]


def test_a_refusal_inside_a_callers_transaction_leaves_the_engine_as_it_was(queue):
    """Inside a caller's atomic block the call runs under a savepoint: its error undoes only
    the call, and the engine's next statements run as before (none left waiting to be sent)."""
    from django.db import transaction

    _warm_rollbacks()
    txn = _put_uncommitted("a")
    transaction_commit(transaction_id=txn)
    with transaction.atomic():
        with pytest.raises(TransactionNotActive):
            transaction_rollback(transaction_id=txn)
        begun = transaction_begin(broker="QM1", timeout_ms=60_000)
    assert Transaction.objects.get(pk=begun.id).state == "active"
    assert Transaction.objects.get(pk=txn).state == "committed"

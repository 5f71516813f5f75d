"""PostgreSQL: the network round trips of each step of a unit of work, counted from libpq's
trace of the engine's connection (the requests that wait for the server: a simple ``Query``
or an extended protocol's ``Sync``). Counts, not timings: they do not move with the load.
docs/performance.md, "Counting what a unit of work writes"."""

from __future__ import annotations

import tempfile

import pytest
from django.db import connection
from django.utils import timezone

from brokers.services.messages import message_get, message_put
from brokers.services.queues import queue_alter, queue_define
from brokers.services.units_of_work import unit_of_work_begin
from tests.conftest import bodies, msgs
from baton_client.errors import QueueFull
from brokers.models import Message, Queue
from brokers.selectors import queue_reserved_depth
from baton_client.errors import TransactionNotActive
from transactions.exceptions import TransactionNotFound
from transactions.manager import transaction_begin, transaction_commit

pytestmark = [
    pytest.mark.django_db(transaction=True),  # the steps drive their own transactions, as in the servers
    pytest.mark.skipif(connection.vendor != "postgresql", reason="round trips are PostgreSQL's"),
]


def _round_trips(step):
    connection.ensure_connection()
    with tempfile.NamedTemporaryFile() as trace:
        connection.connection.pgconn.trace(trace.fileno())
        try:
            result = step()
        finally:
            connection.connection.pgconn.untrace()  # flushes libpq's buffered trace
        with open(trace.name, errors="replace") as written:  # from its start: libpq moved the shared offset
            sent = [line.split("\t") for line in written.read().splitlines()]
    return result, sum(1 for parts in sent if len(parts) > 3 and parts[1] == "F" and parts[3] in ("Query", "Sync"))


def _warm():
    """The definitions cache filled, and the statements of the steps counted below prepared on
    this connection (a text's first use adds its ``PREPARE``: transactions/prepared.py), as in
    a server after its first operations. Leaves the queue empty."""
    for _ in range(2):  # the second time with the cache filled by the first
        transaction_commit(
            transaction_id=message_put(broker="QM1", queue="Q1", messages=msgs("w"), syncpoint="yes").transaction_id
        )
        transaction_commit(transaction_id=message_get(broker="QM1", queue="Q1", syncpoint="yes").transaction_id)
    named = transaction_begin(broker="QM1", timeout_ms=60_000)
    message_put(broker="QM1", queue="Q1", messages=msgs("w"), transaction_id=named.id)
    transaction_commit(transaction_id=named.id)
    message_put(broker="QM1", queue="Q1", messages=msgs("w"))  # outside a unit of work
    message_get(broker="QM1", queue="Q1")  # a final get
    message_put(broker="QM1", queue="Q1", messages=msgs("w"))
    for _ in range(2):
        named = transaction_begin(broker="QM1", timeout_ms=60_000)
        message_get(broker="QM1", queue="Q1", transaction_id=named.id)
        transaction_commit(transaction_id=named.id)


def test_a_put_that_begins_its_unit_of_work_takes_one_round_trip_and_so_does_its_commit(queue):
    _warm()
    put, trips = _round_trips(lambda: message_put(broker="QM1", queue="Q1", messages=msgs("a"), syncpoint="yes"))
    assert trips == 1
    outcome, trips = _round_trips(lambda: transaction_commit(transaction_id=put.transaction_id))
    assert (outcome.state, trips) == ("committed", 1)
    assert bodies(message_get(broker="QM1", queue="Q1")) == ["a"]


def test_a_put_under_a_named_unit_of_work_takes_one_round_trip(queue):
    _warm()
    txn = transaction_begin(broker="QM1", timeout_ms=60_000)
    _, trips = _round_trips(lambda: message_put(broker="QM1", queue="Q1", messages=msgs("a"), transaction_id=txn.id))
    assert trips == 1
    _, trips = _round_trips(lambda: transaction_commit(transaction_id=txn.id))
    assert trips == 1


def test_a_begin_takes_one_round_trip(queue):
    """The broker's definition from the cache, the check that it is current sent with the
    writes (brokers/services/units_of_work.py)."""
    _warm()
    unit_of_work_begin(broker="QM1", timeout_ms=None, user_id=None)
    txn, trips = _round_trips(lambda: unit_of_work_begin(broker="QM1", timeout_ms=None, user_id=None))
    assert (txn.state, trips) == ("active", 1)


def test_an_immediate_put_takes_one_round_trip_and_two_on_a_commit_ordered_queue(queue):
    """On a put-ordered queue (the default) its messages need no commit sequence: the put and
    its COMMIT travel with its call of baton_put_v1. On a commit-ordered queue they get
    commit sequences, which the first round trip (that call) hands out."""
    _warm()
    _, trips = _round_trips(lambda: message_put(broker="QM1", queue="Q1", messages=msgs("a")))
    assert trips == 1
    queue_define(broker="QM1", name="QC", read_order="commit")
    message_put(broker="QM1", queue="QC", messages=msgs("w"))  # the cache, and its statements prepared
    _, trips = _round_trips(lambda: message_put(broker="QM1", queue="QC", messages=msgs("b")))
    assert trips == 2
    assert bodies(message_get(broker="QM1", queue="Q1")) == ["a"]
    assert bodies(message_get(broker="QM1", queue="QC", batch=2)) == ["w", "b"]
    assert Message.objects.filter(queue__name="QC").count() == 0


def test_a_put_its_function_refuses_is_undone_and_answered_with_the_error(queue, django_user_model):
    """The put and its call of baton_put_v1 travel together; whatever the function refuses
    leaves nothing behind and gets the error the function raised: a full queue, a unit of
    work no longer active, someone else's unit of work."""
    _warm()
    queue_alter(broker="QM1", name="Q1", max_depth=1)
    message_put(broker="QM1", queue="Q1", messages=msgs("kept"), syncpoint="yes")
    with pytest.raises(QueueFull):
        message_put(broker="QM1", queue="Q1", messages=msgs("no room"), syncpoint="yes")
    queue_alter(broker="QM1", name="Q1", max_depth=100)
    _warm()  # the cache current again: what follows is refused by the function's look at the unit of work
    done = transaction_begin(broker="QM1", timeout_ms=60_000)
    transaction_commit(transaction_id=done.id)
    with pytest.raises(TransactionNotActive):
        message_put(broker="QM1", queue="Q1", messages=msgs("late"), transaction_id=done.id)
    owner, stranger = (django_user_model.objects.create_user(name) for name in ("owner", "stranger"))
    theirs = transaction_begin(broker="QM1", timeout_ms=60_000, user_id=owner.pk)
    with pytest.raises(TransactionNotFound):  # someone else's: not confirmed to exist
        message_put(broker="QM1", queue="Q1", messages=msgs("intruder"), transaction_id=theirs.id, user=stranger)
    message_put(broker="QM1", queue="Q1", messages=msgs("own"), transaction_id=theirs.id, user=owner)
    transaction_commit(transaction_id=theirs.id)
    assert queue_reserved_depth(queue=Queue.objects.get(broker__name="QM1", name="Q1")) == 2  # "kept" and "own"
    assert sorted(Message.objects.filter(queue__name="Q1").values_list("body", flat=True)) == [b"kept", b"own"]


def test_a_put_trusting_a_stale_cache_reads_the_definitions_again(queue):
    """The put trusts the cached definitions until its first round trip reads the version;
    a change made since costs one more try, never a stale answer."""
    _warm()
    queue_alter(broker="QM1", name="Q1", put_enabled=False)
    queue_alter(broker="QM1", name="Q1", put_enabled=True, max_message_length=10)
    with pytest.raises(Exception) as refused:  # the new limit, not the cached one
        message_put(broker="QM1", queue="Q1", messages=msgs("x" * 50))
    assert refused.value.code == "message_too_large"
    _warm_put = message_put(broker="QM1", queue="Q1", messages=msgs("short"))
    assert _warm_put.transaction_id is None
    queue_alter(broker="QM1", name="Q1", max_message_length=1000)
    message_put(broker="QM1", queue="Q1", messages=msgs("x" * 50))  # refused by the cached 10 unless read again
    assert bodies(message_get(broker="QM1", queue="Q1", batch=5)) == ["short", "x" * 50]


def test_a_get_takes_one_round_trip_and_so_does_its_commit(queue):
    _warm()
    message_put(broker="QM1", queue="Q1", messages=msgs("a", "b", "c"))
    got, trips = _round_trips(lambda: message_get(broker="QM1", queue="Q1", syncpoint="yes"))
    assert (bodies(got), trips) == (["a"], 1)
    _, trips = _round_trips(lambda: transaction_commit(transaction_id=got.transaction_id))
    assert trips == 1
    txn = transaction_begin(broker="QM1", timeout_ms=60_000)
    got, trips = _round_trips(lambda: message_get(broker="QM1", queue="Q1", transaction_id=txn.id))
    assert (bodies(got), trips) == (["b"], 1)
    got, trips = _round_trips(lambda: message_get(broker="QM1", queue="Q1"))
    assert (bodies(got), trips) == (["c"], 1)
    got, trips = _round_trips(lambda: message_get(broker="QM1", queue="Q1", syncpoint="yes"))
    assert (bodies(got), got.transaction_id, trips) == ([], None, 1)


def test_a_get_whose_look_finds_a_lapsed_lock_undoes_its_take_and_settles_it_first(queue):
    """The get's function finds a peek-lock that ran out (BT110): the lock is released first
    and the same call made again, so the older, released message is the one taken."""
    _warm()
    queue_alter(broker="QM1", name="Q1", lock_duration_ms=1)
    message_put(broker="QM1", queue="Q1", messages=msgs("first", "second"))
    locked = message_get(broker="QM1", queue="Q1", mode="peek_lock")
    assert bodies(locked) == ["first"]
    deadline = locked.messages[0].locked_until
    while timezone.now() <= deadline:  # a lock of 1 ms: run out by the clock, not by a sleep's length
        pass
    assert bodies(message_get(broker="QM1", queue="Q1", syncpoint="yes")) == ["first"]


def test_a_pre_emptive_get_of_an_uncommitted_put_takes_six_round_trips_after_its_first(queue):
    """The get's statements (the exclusive link-graph lock, sent with the step's first statements):
    its links and both sides' marks travel with its other statements
    (``transactions.queries.transactions_mark``, ``links_insert``)."""
    _warm()

    def linked_pair():
        producer = transaction_begin(broker="QM1", timeout_ms=60_000)
        message_put(broker="QM1", queue="Q1", messages=msgs("a", "b"), transaction_id=producer.id)
        consumer = transaction_begin(broker="QM1", timeout_ms=60_000)
        return producer.id, consumer.id

    def pre_emptive_get(consumer: str):
        return message_get(broker="QM1", queue="Q1", transaction_id=consumer, preemptive=True)

    for producer, consumer in [linked_pair()]:  # the statements prepared on this connection
        pre_emptive_get(consumer), pre_emptive_get(consumer)
        transaction_commit(transaction_id=producer), transaction_commit(transaction_id=consumer)
    producer, consumer = linked_pair()
    got, first = _round_trips(lambda: pre_emptive_get(consumer))  # marks both sides
    again, second = _round_trips(lambda: pre_emptive_get(consumer))  # both marked already
    assert (bodies(got), bodies(again), first, second) == (["a"], ["b"], 7, 6)

"""A queue's room (brokers/queries.py, "queue counters"): puts take it on the queue's row,
gets and rollbacks give it back on release rows (``QueueRelease``) that housekeeping folds
into the queue's counter. The room stays exact: ``max_depth`` is never passed, and a get
does not wait for a put holding the queue's row."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection, connections

from baton_client.errors import QueueFull
from brokers.models import Message, Queue, QueueRelease
from brokers.selectors import queue_reserved_depth
from brokers.services.housekeeping import queue_releases_fold
from brokers.services.messages import message_get, message_put
from brokers.services.queues import queue_define
from tests.conftest import msgs
from transactions.manager import transaction_begin, transaction_rollback

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def _queue(max_depth: int) -> Queue:
    from brokers.services.brokers import broker_define

    broker_define(name="QM1", transaction_timeout_ms=60_000)
    return queue_define(broker="QM1", name="Q1", max_depth=max_depth)


def test_gets_and_rollbacks_give_room_back_on_release_rows_and_the_room_stays_exact():
    q = _queue(3)
    message_put(broker="QM1", queue="Q1", messages=msgs("a", "b", "c"))
    with pytest.raises(QueueFull):
        message_put(broker="QM1", queue="Q1", messages=msgs("d"))
    assert len(message_get(broker="QM1", queue="Q1", batch=2).messages) == 2
    txn = transaction_begin(broker="QM1", timeout_ms=60_000)
    message_put(broker="QM1", queue="Q1", messages=msgs("u"), transaction_id=txn.id)
    transaction_rollback(transaction_id=txn.id)  # its room comes back too
    q.refresh_from_db()
    assert q.reserved_depth == 4  # the queue's row: only puts
    assert sum(QueueRelease.objects.filter(queue=q).values_list("released", flat=True)) == 3
    assert queue_reserved_depth(queue=q) == 1 == Message.objects.filter(queue=q).count()
    message_put(broker="QM1", queue="Q1", messages=msgs("e", "f"))
    with pytest.raises(QueueFull):
        message_put(broker="QM1", queue="Q1", messages=msgs("g"))
    assert queue_releases_fold() == 3
    q.refresh_from_db()
    assert (q.reserved_depth, queue_reserved_depth(queue=q)) == (3, 3)
    assert set(QueueRelease.objects.filter(queue=q).values_list("released", flat=True)) == {0}
    with pytest.raises(QueueFull):
        message_put(broker="QM1", queue="Q1", messages=msgs("h"))
    assert queue_releases_fold() == 0


def test_a_get_does_not_wait_for_a_put_holding_the_queues_row():
    if connection.vendor != "postgresql":
        pytest.skip("SQLite's writers are serialised anyway")
    import psycopg

    from tests.conftest import database_url

    q = _queue(100)
    message_put(broker="QM1", queue="Q1", messages=msgs("a"))
    with psycopg.connect(database_url()) as putter:
        # what a put holds from its reservation to its commit
        putter.execute("UPDATE brokers_queue SET reserved_depth = reserved_depth + 1 WHERE id = %s", [q.pk])
        got: list = []

        def get() -> None:
            try:
                got.extend(message_get(broker="QM1", queue="Q1").messages)
            finally:
                connections.close_all()

        getter = threading.Thread(target=get)
        getter.start()
        getter.join(timeout=30)
        finished = not getter.is_alive()
        putter.rollback()
        getter.join(timeout=30)
    assert finished and [m.body for m in got] == [b"a"]


def test_concurrent_puts_and_gets_never_pass_max_depth():
    if connection.vendor != "postgresql":
        pytest.skip("SQLite's writers are serialised: nothing runs at once")
    from tests.conftest import database_url

    import psycopg

    q = _queue(5)
    stop = threading.Event()
    errors: list[BaseException] = []
    peaks: list[int] = []
    counts = {"put": 0, "full": 0, "got": 0}
    lock = threading.Lock()
    full = threading.Event()  # the getters start once the queue has been full

    def putter() -> None:
        try:
            while not stop.is_set():
                try:
                    message_put(broker="QM1", queue="Q1", messages=msgs("p"))
                    with lock:
                        counts["put"] += 1
                except QueueFull:
                    full.set()
                    with lock:
                        counts["full"] += 1
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)
        finally:
            connections.close_all()

    def getter() -> None:
        try:
            full.wait(timeout=60)
            while not stop.is_set():
                n = len(message_get(broker="QM1", queue="Q1", batch=2).messages)
                with lock:
                    counts["got"] += n
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=putter) for _ in range(3)] + [threading.Thread(target=getter) for _ in range(2)]
    for t in threads:
        t.start()
    with psycopg.connect(database_url(), autocommit=True) as watcher:
        deadline = time.monotonic() + 60
        while (len(peaks) < 300 or not counts["got"]) and not errors and time.monotonic() < deadline:
            # one statement: one snapshot of the committed messages
            peaks.append(
                watcher.execute("SELECT count(*) FROM brokers_message WHERE queue_id = %s", [q.pk]).fetchone()[0]
            )
    stop.set()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors
    assert max(peaks) <= 5
    assert counts["put"] > 0 and counts["full"] > 0 and counts["got"] > 0
    assert queue_reserved_depth(queue=q) == Message.objects.filter(queue=q).count() == counts["put"] - counts["got"]

"""An ordered get that waits is woken when the message in its way goes: the unit of work
holding it commits (or rolls back), the uncommitted head is committed, or a lock on it is
abandoned. Real database transactions (``transactional_db``); the getter runs in a thread
that closes its database connection when done."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection

from brokers.services.brokers import broker_define
from brokers.services.locks import lock_abandon
from brokers.services.messages import get as get_module
from brokers.services.ordering import REASON_IN_FLIGHT, REASON_UNCOMMITTED
from brokers.services.queues import queue_define
from tests.conftest import bodies

from .conftest import BROKER, begin, commit, get, put, rollback

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]  # postgres: also run on PostgreSQL

WAIT_S = 20


@pytest.fixture
def queues(transactional_db):
    broker_define(name=BROKER, transaction_timeout_ms=60_000)
    queue_define(broker=BROKER, name="QP", read_order="put")
    queue_define(broker=BROKER, name="QC", read_order="commit")


@pytest.fixture
def waiting_reasons(monkeypatch):
    """Reasons of the empty attempts any get made, and an event set at the first one."""
    seen: list[str] = []
    event = threading.Event()
    original = get_module._get_once

    def watched(**kwargs):
        result = original(**kwargs)
        if not result.messages:
            seen.append(result.reason)
            event.set()
        return result

    monkeypatch.setattr(get_module, "_get_once", watched)
    return seen, event


def _waiting_get(queue: str, **options):
    """Start an ordered get with a wait in a thread; return (thread, outcome dict)."""
    outcome: dict = {}

    def run():
        try:
            txn = begin()
            started = time.monotonic()
            outcome["result"] = get(queue, ordered=True, wait=WAIT_S, transaction_id=txn, **options)
            outcome["elapsed"] = time.monotonic() - started
            outcome["txn"] = txn
        except BaseException as exc:  # reported by the test
            outcome["error"] = exc
        finally:
            connection.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, outcome


def _finished(thread, outcome):
    thread.join(timeout=WAIT_S + 10)
    assert not thread.is_alive(), "the waiting get never returned"
    assert "error" not in outcome, outcome.get("error")
    return outcome["result"]


@pytest.mark.parametrize("queue", ["QP", "QC"])
def test_waiting_ordered_get_is_woken_when_in_flight_head_is_committed(queues, waiting_reasons, queue):
    seen, first_empty = waiting_reasons
    put(queue, "M1", "M2")
    holder = begin()
    assert bodies(get(queue, ordered=True, transaction_id=holder)) == ["M1"]
    thread, outcome = _waiting_get(queue)
    assert first_empty.wait(timeout=WAIT_S), "the ordered get never looked"
    commit(holder)
    result = _finished(thread, outcome)
    assert bodies(result) == ["M2"]
    assert outcome["elapsed"] < WAIT_S / 2
    assert seen[0] == REASON_IN_FLIGHT


@pytest.mark.parametrize("queue", ["QP", "QC"])
def test_waiting_ordered_get_is_woken_by_rollback_and_gets_the_head_back(queues, waiting_reasons, queue):
    seen, first_empty = waiting_reasons
    put(queue, "M1", "M2")
    holder = begin()
    assert bodies(get(queue, ordered=True, transaction_id=holder)) == ["M1"]
    thread, outcome = _waiting_get(queue)
    assert first_empty.wait(timeout=WAIT_S)
    rollback(holder)
    result = _finished(thread, outcome)
    assert bodies(result) == ["M1"]
    assert result.messages[0].backout_count == 1
    assert seen[0] == REASON_IN_FLIGHT


def test_waiting_ordered_get_is_woken_when_uncommitted_head_commits(queues, waiting_reasons):
    seen, first_empty = waiting_reasons
    producer = begin()
    put("QP", "U1", txn=producer)
    put("QP", "M2")
    thread, outcome = _waiting_get("QP", batch=5)
    assert first_empty.wait(timeout=WAIT_S)
    commit(producer)
    result = _finished(thread, outcome)
    assert bodies(result) == ["U1", "M2"]
    assert seen[0] == REASON_UNCOMMITTED


def test_waiting_ordered_get_is_woken_when_lock_is_abandoned(queues, waiting_reasons):
    seen, first_empty = waiting_reasons
    put("QP", "M1")
    locked = get("QP", mode="peek_lock")
    thread, outcome = _waiting_get("QP")
    assert first_empty.wait(timeout=WAIT_S)
    lock_abandon(token=locked.messages[0].lock_token)
    result = _finished(thread, outcome)
    assert bodies(result) == ["M1"]
    assert result.messages[0].delivery_count == 2
    assert seen[0] == REASON_IN_FLIGHT


@pytest.mark.parametrize("queue", ["QP", "QC"])
def test_concurrent_ordered_gets_of_different_units_of_work_take_one_message(queues, queue):
    """Several units of work ask for the next message in order at the same moment: exactly
    one gets M1; every other one is told next_in_order_in_flight (none takes M2)."""
    put(queue, "M1", "M2", "M3")
    workers = 4
    start = threading.Barrier(workers)
    outcomes: list = [None] * workers

    def run(i):
        try:
            txn = begin()
            start.wait(timeout=30)
            result = get(queue, ordered=True, transaction_id=txn)
            outcomes[i] = (bodies(result), result.reason)
        except BaseException as exc:  # reported by the test
            outcomes[i] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
        assert not t.is_alive()
    assert not [o for o in outcomes if isinstance(o, BaseException)], outcomes
    assert sorted(outcomes, key=repr) == sorted([(["M1"], None)] + [([], REASON_IN_FLIGHT)] * (workers - 1), key=repr)

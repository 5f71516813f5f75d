"""Gets that wait: a message put by another thread while a get waits is returned; with
nothing coming the get returns empty once its wait is over. These run with real
transactions (``transactional_db``) so that the other thread's put commits."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from brokers.definitions import definitions_checked
from brokers.services.messages import get as messages_module
from brokers.services.brokers import broker_define
from brokers.services.messages import message_get, message_put
from brokers.services.queues import queue_define
from tests.conftest import bodies, msgs
from transactions.manager import transaction_begin, transaction_commit

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def qm(transactional_db):
    broker_define(name="QM1", transaction_timeout_ms=60_000)
    queue_define(broker="QM1", name="Q1")
    # the process's definitions cache as any operation since these definitions were made leaves
    # it (one from another test's database costs a waiting get one look more: a stale cache,
    # tests/brokers/api/test_session_wait_begun.py)
    definitions_checked()


@pytest.fixture
def first_attempt_empty(monkeypatch):
    """An event set once a get has looked at the queue, found it empty and is about to wait."""
    event = threading.Event()
    original = messages_module._get_once

    def watched(**kwargs):
        result = original(**kwargs)
        if not result.messages:
            event.set()
        return result

    monkeypatch.setattr(messages_module, "_get_once", watched)
    return event


def _in_thread(work, errors: list) -> threading.Thread:
    def run():
        try:
            work()
        except BaseException as exc:  # reported by the test
            errors.append(exc)
        finally:
            connection.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_waiting_get_returns_message_put_by_another_thread(qm, first_attempt_empty):
    errors: list = []

    def producer():
        assert first_attempt_empty.wait(timeout=30), "the get never started waiting"
        message_put(broker="QM1", queue="Q1", messages=msgs("hello"))

    thread = _in_thread(producer, errors)
    result = message_get(broker="QM1", queue="Q1", wait=30)
    thread.join(timeout=30)
    assert not errors
    assert first_attempt_empty.is_set()
    assert bodies(result) == ["hello"]
    assert message_get(broker="QM1", queue="Q1").messages == []


def test_waiting_get_sees_transactional_put_once_committed(qm, first_attempt_empty):
    errors: list = []

    def producer():
        assert first_attempt_empty.wait(timeout=30)
        txn = transaction_begin(broker="QM1", timeout_ms=60_000)
        message_put(broker="QM1", queue="Q1", messages=msgs("a", "b"), transaction_id=txn.id)
        transaction_commit(transaction_id=txn.id)

    thread = _in_thread(producer, errors)
    result = message_get(broker="QM1", queue="Q1", wait=30, batch=5)
    thread.join(timeout=30)
    assert not errors
    # the commit makes both visible at once; the get may see them together
    assert bodies(result) == ["a", "b"]


def test_waiting_get_under_transaction(qm, first_attempt_empty):
    errors: list = []
    txn = transaction_begin(broker="QM1", timeout_ms=60_000)

    def producer():
        assert first_attempt_empty.wait(timeout=30)
        message_put(broker="QM1", queue="Q1", messages=msgs("x"))

    thread = _in_thread(producer, errors)
    result = message_get(broker="QM1", queue="Q1", wait=30, transaction_id=txn.id)
    thread.join(timeout=30)
    assert not errors
    assert bodies(result) == ["x"] and result.transaction_id == txn.id
    assert result.messages[0].get_transaction_id == txn.id
    transaction_commit(transaction_id=txn.id)
    assert message_get(broker="QM1", queue="Q1").messages == []


def test_waiting_get_with_match_ignores_other_messages(qm, first_attempt_empty):
    errors: list = []
    wanted = "ab" * 24

    def producer():
        assert first_attempt_empty.wait(timeout=30)
        message_put(broker="QM1", queue="Q1", messages=msgs("other"))
        message_put(broker="QM1", queue="Q1", messages=msgs("reply", correl_id=wanted))

    thread = _in_thread(producer, errors)
    result = message_get(broker="QM1", queue="Q1", wait=30, correl_id=wanted)
    thread.join(timeout=30)
    assert not errors
    assert bodies(result) == ["reply"]
    assert bodies(message_get(broker="QM1", queue="Q1")) == ["other"]


def test_waiting_get_returns_empty_when_nothing_comes(qm):
    result = message_get(broker="QM1", queue="Q1", wait=0.3)
    assert result.messages == [] and result.reason == "empty"


def test_a_waiting_get_with_nothing_coming_looks_before_it_waits_and_when_the_wait_ends(qm, monkeypatch):
    """No look before the wait begins listening that the wait's own first look repeats
    (there were three looks)."""
    from transactions.wakeup_bus import wakeup_bus

    wakeup_bus().listen()
    if not wakeup_bus().listening:
        pytest.skip("a bus that polls looks again at every poll")
    looks: list = []
    original = messages_module._get_once

    def counted(**kwargs):
        looks.append(kwargs["queue"])
        return original(**kwargs)

    monkeypatch.setattr(messages_module, "_get_once", counted)
    result = message_get(broker="QM1", queue="Q1", wait=0.2)
    assert (result.messages, result.reason, looks) == ([], "empty", ["Q1", "Q1"])


def test_competing_waiting_getters_each_get_one(qm):
    """Two getters wait; two messages arrive; each getter gets exactly one, none twice."""
    errors: list = []
    results: list = []
    waiting = threading.Barrier(3)

    def consumer():
        waiting.wait(timeout=30)
        results.append(bodies(message_get(broker="QM1", queue="Q1", wait=20)))

    threads = [_in_thread(consumer, errors) for _ in range(2)]
    waiting.wait(timeout=30)
    message_put(broker="QM1", queue="Q1", messages=msgs("m1"))
    message_put(broker="QM1", queue="Q1", messages=msgs("m2"))
    for t in threads:
        t.join(timeout=30)
    assert not errors
    assert sorted(b for r in results for b in r) == ["m1", "m2"]
    assert all(len(r) == 1 for r in results)

"""A get that waits, over a session or REST, looks once at once and, if it must wait, goes on
waiting from that look (transactions/wakeups.py, ``wait_begun`` and ``wait_resumed``): it
does not look again unless something was committed since. So a wait that ends empty looks
twice (at once, and when the wait is over), not three times; a message committed between
the first look and the wait is found at once; no key stays watched afterwards."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.contrib.auth import get_user_model
from django.db import connections

from brokers.api import session as session_module
from brokers.api.waits import performed
from brokers import definitions
from brokers.api.operations import MessageGet
from brokers.definitions import definitions_checked, queue_cached
from brokers.services.brokers import broker_define
from brokers.services.message_input import MessageInput
from brokers.services.messages import get as messages_module
from brokers.services.messages import message_get, message_put
from brokers.services.queues import queue_define, queue_delete
from brokers.services.room import queue_wakeup_key
from transactions import wakeups

from tests.brokers.api.session_thread import session_thread_run

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def qm(transactional_db):
    broker_define(name="QM1", transaction_timeout_ms=60_000)
    queue_define(broker="QM1", name="Q1")
    # the process's definitions cache as any operation since these definitions were made
    # leaves it (one left from another test's database costs a waiting get one look more:
    # test_a_waiting_get_with_a_stale_cache_listens_on_the_queue_it_read)
    definitions_checked()
    return get_user_model().objects.create_superuser("tester")


@pytest.fixture(autouse=True)
def waiter(monkeypatch):
    """The sessions' waiter pool, one thread, whose database connection is closed afterwards
    (the pool's threads keep theirs, as in the server)."""
    pool = ThreadPoolExecutor(1, thread_name_prefix="session-wait")
    monkeypatch.setattr(session_module, "_WAITERS", pool)
    yield
    pool.submit(connections.close_all).result(timeout=60)
    pool.shutdown()


@pytest.fixture
def looks(monkeypatch):
    """Each look a get makes at its queue (``_get_once``), and what it found; ``then`` runs
    after a look (once)."""
    made: list[int] = []
    then: list = []
    original = messages_module._get_once

    def counted(**kwargs):
        result = original(**kwargs)
        made.append(len(result.messages))
        if then:
            then.pop()()
        return result

    monkeypatch.setattr(messages_module, "_get_once", counted)
    counted.made, counted.then = made, then
    return counted


def _session_get(user, wait: float) -> dict:
    consumer = session_thread_run(user, [{"id": 1, "op": "get", "broker": "QM1", "queue": "Q1", "wait": wait}])
    assert consumer.replied.wait(timeout=60)  # a waiter thread answers, its wait over
    [reply] = consumer.replies
    return reply


def _rest_get(user, wait: float) -> dict:
    status, body = performed(MessageGet, user, MessageGet.parse({"broker": "QM1", "queue": "Q1", "wait": wait}))
    return {"status": status, **body}


@pytest.mark.parametrize("get", [_session_get, _rest_get], ids=["session", "rest"])
def test_a_wait_that_ends_empty_looks_twice(qm, looks, get):
    reply = get(qm, 0.3)
    assert (reply["status"], reply["messages"]) == (200, [])
    assert looks.made == [0, 0]
    assert wakeups._watchers == {}


@pytest.mark.parametrize("get", [_session_get, _rest_get], ids=["session", "rest"])
def test_a_message_committed_after_the_first_look_is_found_at_once(qm, looks, get):
    looks.then.append(lambda: message_put(broker="QM1", queue="Q1", messages=[MessageInput(body=b"late")]))
    reply = get(qm, 30)
    assert reply["status"] == 200 and [m["body"] for m in reply["messages"]] == ["late"]
    assert looks.made == [0, 1]
    assert wakeups._watchers == {}


def test_a_wait_resumed_after_its_time_ran_out_looks_once_more_and_ends_empty(qm, looks):
    """The hand-over to a waiter thread can take longer than a short wait (a loaded machine):
    the resumed wait then makes its last look at once and answers empty, as a wait that runs
    out does (it answered 500 with an IndexError when it found its time gone before any look)."""
    with wakeups.wait_begun() as begun:
        first = message_get(broker="QM1", queue="Q1", wait=30)  # within wait_begun: one look, then back
    assert first.messages == [] and begun.keys is not None
    begun.deadline = time.monotonic() - 1  # the wait's time ran out during the hand-over
    with wakeups.wait_resumed(begun):
        last = message_get(broker="QM1", queue="Q1", wait=30)  # goes on from the begun wait's deadline
    assert last.messages == []
    assert looks.made == [0, 0]
    assert wakeups._watchers == {}


def test_a_waiting_get_with_a_stale_cache_listens_on_the_queue_it_read(qm, looks):
    """A get that waits takes the queue to listen on from the process's definitions cache
    without reading the definitions version first; its looks compare the version. When the
    queue was deleted and made again elsewhere, its first look reads the new queue, and the
    wait listens on that one: a put there wakes it."""
    old = queue_cached(broker="QM1", name="Q1").pk
    kept = {"key": definitions._cache["key"], "queues": dict(definitions._cache["queues"])}
    kept["brokers"] = dict(definitions._cache["brokers"])
    queue_delete(broker="QM1", name="Q1")
    queue_define(broker="QM1", name="Q1")
    definitions._cache.update(kept)  # another process changed them: this one's cache is as it was
    got: list = []
    getter = threading.Thread(target=lambda: got.append(message_get(broker="QM1", queue="Q1", wait=60)))
    getter.start()
    try:
        deadline = time.monotonic() + 30
        while not any(key != queue_wakeup_key(old) for key in wakeups._watchers) and time.monotonic() < deadline:
            time.sleep(0.01)  # until the wait listens on the queue it read
        new = queue_cached(broker="QM1", name="Q1").pk
        assert new != old and queue_wakeup_key(new) in wakeups._watchers
        message_put(broker="QM1", queue="Q1", messages=[MessageInput(body=b"woken")])
        getter.join(20)  # a wait on the old queue would last its 60 s
        assert not getter.is_alive()
        assert [m.body for m in got[0].messages] == [b"woken"]
        assert looks.made[0] == 0 and looks.made[-1] == 1
    finally:
        getter.join(70)
        connections.close_all()
    assert wakeups._watchers == {}

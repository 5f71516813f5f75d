"""A commit wakes the threads waiting on its keys and no others (transactions/wakeups.py):
gets waiting on idle queues are not woken, one by one, by every commit of the process."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connections

from brokers.services.messages import message_get, message_put
from brokers.services.queues import queue_define
from tests.conftest import bodies, msgs
from transactions import wakeups
from transactions.wakeup_bus import wakeup_bus
from transactions.wakeups import wakeups_woken

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

QUEUES = [f"W{n}" for n in range(5)]


def asleep(count: int, deadline_s: float = 10.0) -> None:
    """Until ``count`` keys have a thread asleep on them (each waiter sleeps on its own)."""
    deadline = time.monotonic() + deadline_s
    while sum(len(s) for s in wakeups._sleepers.values()) < count:
        assert time.monotonic() < deadline, f"waiters asleep: {wakeups._sleepers}"
        time.sleep(0.005)


def listening() -> None:
    """The process's wake-up listener listens, and has woken every waiter as it does when it
    starts (before this test's waiters sleep: that wake-up is not a commit's)."""
    bus = wakeup_bus()
    was, epoch = bus.listening, wakeups._epoch[0]
    bus.listen()
    deadline = time.monotonic() + 10
    while not bus.listening or (not was and wakeups._epoch[0] == epoch):
        assert time.monotonic() < deadline, "the wake-up listener did not start"
        time.sleep(0.005)


def test_a_put_wakes_only_the_get_waiting_on_its_queue(broker):
    for name in QUEUES:
        queue_define(broker="QM1", name=name)
    listening()
    got: dict[str, list[str]] = {}

    def waiting_get(name: str) -> None:
        try:
            got[name] = bodies(message_get(broker="QM1", queue=name, wait=30))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=waiting_get, args=(name,)) for name in QUEUES]
    for thread in threads:
        thread.start()
    asleep(len(QUEUES))

    for n, name in enumerate(QUEUES):
        woken = wakeups_woken()
        message_put(broker="QM1", queue=name, messages=msgs(f"for {name}"))
        threads[n].join(30)
        assert got[name] == [f"for {name}"]
        # the put's commit woke the one thread waiting on its queue, none of the others
        assert wakeups_woken() - woken == 1
        asleep(len(QUEUES) - n - 1)
    assert wakeups._sleepers == {} and wakeups._watchers == {}


def test_a_wait_naming_a_key_twice_sleeps_and_ends_cleanly(db):
    listening()
    assert wakeups.wait_for(lambda: None, keys=["queue:1", "queue:1", "txn:9"], wait_s=0.05) is None
    assert wakeups._sleepers == {} and wakeups._watchers == {}

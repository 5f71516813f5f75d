"""The pool's threads (brokers/api/pump.py ``Pool``): at most ``size()`` work at once, and one
in a long wait (``Pool.blocking``: a password's hash) does not count, so the tasks that wait
behind it get a thread of their own meanwhile."""

from __future__ import annotations

import threading

from brokers.api.pump import Pool


def test_a_task_in_a_long_wait_lets_the_next_task_run_on_another_thread():
    pool = Pool("test-blocking", lambda: 1)
    release, inside, ran = threading.Event(), threading.Event(), threading.Event()

    def slow() -> None:
        with pool.blocking():
            inside.set()
            assert release.wait(10)

    pool.submit(slow)
    assert inside.wait(10)
    pool.submit(ran.set)
    try:
        assert ran.wait(10)  # not behind the slow one
    finally:
        release.set()


def test_without_a_long_wait_one_thread_takes_the_tasks_in_turn():
    pool = Pool("test-one", lambda: 1)
    release, inside, ran = threading.Event(), threading.Event(), threading.Event()
    order: list[str] = []

    def busy() -> None:
        inside.set()
        assert release.wait(10)
        order.append("busy")

    pool.submit(busy)
    assert inside.wait(10)
    pool.submit(lambda: (order.append("next"), ran.set()))
    assert pool.threads == 1  # the second task waits for the one thread
    release.set()
    assert ran.wait(10)
    assert order == ["busy", "next"]

"""The wake-up versions of a process (transactions/wakeups.py) are kept only for the keys
being waited on: notifications of every unit of work and queue never accumulate."""

from __future__ import annotations

import pytest

from transactions import wakeups
from transactions.wakeups import wait_for, wakeup_notify

pytestmark = pytest.mark.once


def test_notifications_of_keys_nobody_waits_on_leave_nothing_behind():
    wakeup_notify([f"txn:{n}" for n in range(1000)] + [f"queue:{n}" for n in range(1000)])
    assert wakeups._versions == {} and wakeups._watchers == {}


def test_a_wait_watches_its_keys_until_it_ends_and_sees_a_notification_meanwhile():
    during = []

    def attempt():
        during.append(dict(wakeups._versions))
        wakeup_notify(["queue:1", "txn:other"])  # a commit while the attempt runs
        during.append(dict(wakeups._versions))
        return "found"

    assert wait_for(attempt, keys=["queue:1", "queue:1", "txn:9"], wait_s=0) == "found"
    assert during == [{"queue:1": 0, "txn:9": 0}, {"queue:1": 1, "txn:9": 0}]
    assert wakeups._versions == {} and wakeups._watchers == {}


def test_a_watch_without_a_thread_is_called_for_its_keys_until_unwatched():
    from transactions.wakeups import wakeup_notify_all, wakeup_unwatch, wakeup_watch

    calls = []

    def called():
        calls.append(dict(wakeups._versions))

    wakeup_watch(["queue:7"], called)
    wakeup_notify(["queue:8", "txn:1"])  # other keys: not called
    assert calls == []
    wakeup_notify(["queue:7"])
    assert calls == [{"queue:7": 1}]  # called after its key's version moved (a look then sees it)
    wakeup_notify_all()  # a listener (re)connected: every waiter looks again
    assert len(calls) == 2
    wakeup_unwatch(["queue:7"], called)
    wakeup_notify(["queue:7"])
    wakeup_notify_all()
    assert len(calls) == 2
    assert wakeups._versions == {} and wakeups._watchers == {} and wakeups._callbacks == {}

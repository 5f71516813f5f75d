"""Wake-ups for callers that wait (gets that wait, held commits, ready-checks).

A waiter records the version of its keys ("queue:<id>", "txn:<id>"), tries its operation,
and if that found nothing sleeps until a key's version changes or its wait ends. A commit
that concerns a key bumps its version in every process: in its own at once (on commit),
waking only the threads asleep on that key (each sleeps on a condition of its own: a commit
costs the waits it concerns, not every waiting thread of the process), and in the others
through the process's wake-up bus (``transactions.wakeup_bus``: PostgreSQL
``LISTEN/NOTIFY``, Redis publish/subscribe, or local datagram sockets on SQLite), whose
one listener thread per process bumps the versions of the keys it hears of.

Only while a process's listener is not listening (not yet connected, its connection
lost, or ``BATON_WAKEUPS=poll``) — when a notification could be lost — do waiters fall
back to re-checking at intervals growing from 20 ms to half a second; a listener that
(re)connects, or learns that a notification was lost, wakes every waiter.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from .queries import default_db

T = TypeVar("T")

#: Guards the tables below; each sleeping wait has a condition of its own on it.
_lock = threading.Lock()
#: The version of each key a waiter of this process is waiting on, and how many waits watch
#: it. A key nobody waits on has no entry (a notification for it wakes no one here), so the
#: table holds the keys being waited on, never every queue and unit of work ever notified.
_versions: dict[str, int] = {}
_watchers: dict[str, int] = {}
#: Bumped to wake every waiter (a listener connected, lost its connection, or missed a message).
_epoch = [0]
#: Waiters that hold no thread (``wakeup_watch``): the callbacks to call for each key.
_callbacks: dict[str, list[Callable[[], None]]] = {}
#: The waits asleep on each key (``wait_for``), each on its thread's condition: a commit wakes
#: the threads that wait on its keys, not every waiting thread of the process.
_sleepers: dict[str, set[threading.Condition]] = {}
#: Sleeping threads woken so far (:func:`wakeups_woken`).
_woken = [0]

POLL_FIRST_S = 0.02
POLL_MAX_S = 0.5


def wakeup_notify(keys: Iterable[str]) -> None:
    """Wake this process's waiters on these keys."""
    called: list[Callable[[], None]] = []
    with _lock:
        woken: set[threading.Condition] = set()  # a wait on several of these keys is woken once
        for key in keys:
            if key in _versions:
                _versions[key] += 1
                woken.update(_sleepers.get(key, ()))
                if key in _callbacks:
                    called += _callbacks[key]
        _woke(woken)
    for callback in called:
        callback()


def _woke(sleepers: set[threading.Condition]) -> None:
    """(Under ``_lock``.) Wake these sleeping waits."""
    for sleeper in sleepers:
        sleeper.notify()
    _woken[0] += len(sleepers)


def wakeups_woken() -> int:
    """How many times a sleeping waiter's thread has been woken in this process (for tests)."""
    return _woken[0]


def wakeup_notify_all() -> None:
    """Wake every waiter of this process (each re-checks once)."""
    with _lock:
        _epoch[0] += 1
        _woke({sleeper for sleepers in _sleepers.values() for sleeper in sleepers})
        called = [callback for callbacks in _callbacks.values() for callback in callbacks]
    for callback in called:
        callback()


def wakeup_watch(keys: list[str], callback: Callable[[], None]) -> None:
    """A waiter that holds no thread: ``callback()`` is called (on the notifying thread,
    outside any lock: it must only schedule the look, not make it) whenever these keys are
    notified, and when every waiter is woken, until ``wakeup_unwatch``. Watching before the
    first look, the caller misses no commit after it (as ``wait_for``)."""
    _watch(keys)
    with _lock:
        for key in keys:
            _callbacks.setdefault(key, []).append(callback)


def wakeup_unwatch(keys: list[str], callback: Callable[[], None]) -> None:
    with _lock:
        for key in keys:
            left = [c for c in _callbacks.get(key, ()) if c is not callback]
            if left:
                _callbacks[key] = left
            else:
                _callbacks.pop(key, None)
    _unwatch(keys)


def wakeup_notify_on_commit(keys: Iterable[str]) -> None:
    """Wake waiters on these keys, in every process, once the caller's database transaction
    commits (nothing if it rolls back). The keys of one database transaction go out
    together, in one hook: one local notification and one publication per commit."""
    keys = list(keys)
    if not keys:
        return
    conn = default_db()  # Django's connection, without ``transaction.get_connection()``'s look-up
    pending = conn.__dict__.get("_baton_wakeups")
    if pending is not None and conn.in_atomic_block and any(hook is pending for _, hook, _ in conn.run_on_commit):
        pending.keys.extend(keys)  # this transaction's hook is registered: it takes these too
        return
    from .wakeup_bus import wakeup_bus

    pending = _Committed(conn, wakeup_bus(), keys)
    conn._baton_wakeups = pending
    conn.on_commit(pending)  # as ``transaction.on_commit``: run now outside a transaction


def wakeup_notify_committed(keys: list[str], *, published: bool) -> None:
    """After a database transaction that concerned these keys has committed: wake this
    process's waiters and tell the other processes, unless the transaction did that itself
    (``published``: a ``NOTIFY`` inside it, on the bus's ``channel_in_transaction``)."""
    from .wakeup_bus import wakeup_bus

    keys = list(dict.fromkeys(keys))
    wakeup_notify(keys)
    if not published:
        wakeup_bus().publish_after_commit(keys)


class _Committed:
    """The on-commit hook of one database transaction's wake-ups."""

    __slots__ = ("conn", "bus", "keys")

    def __init__(self, conn, bus, keys: list[str]) -> None:
        self.conn, self.bus, self.keys = conn, bus, keys

    def __call__(self) -> None:
        if self.conn.__dict__.get("_baton_wakeups") is self:
            self.conn._baton_wakeups = None
        keys = list(dict.fromkeys(self.keys))
        wakeup_notify(keys)
        self.bus.publish_after_commit(keys)


def _slept(keys: list[str], seen: tuple, timeout: float) -> None:
    """Sleep until a version of ``keys`` (or the epoch) moves from ``seen``, or ``timeout``
    seconds pass, on this thread's condition, woken only by the keys' notifications."""
    sleeper = getattr(_local, "sleeper", None)
    if sleeper is None:
        sleeper = _local.sleeper = threading.Condition(_lock)
    keys = list(dict.fromkeys(keys))  # a key named twice is left once
    with _lock:
        for key in keys:
            _sleepers.setdefault(key, set()).add(sleeper)
        try:
            sleeper.wait_for(lambda: _seen(keys) != seen, timeout=timeout)
        finally:
            for key in keys:
                sleepers = _sleepers[key]
                sleepers.discard(sleeper)
                if not sleepers:
                    del _sleepers[key]


def _seen(keys: list[str]) -> tuple:
    return (_epoch[0], *[_versions[k] for k in keys])


def _watch(keys: list[str]) -> None:
    with _lock:
        for key in keys:
            _watchers[key] = _watchers.get(key, 0) + 1
            _versions.setdefault(key, 0)


def _unwatch(keys: list[str]) -> None:
    with _lock:
        for key in keys:
            left = _watchers[key] - 1
            if left:
                _watchers[key] = left
            else:
                del _watchers[key], _versions[key]


class Begun:
    """A wait that has looked once and found nothing, to go on in another thread
    (``wait_begun``, ``wait_resumed``): the keys it watches (still watched), their versions
    before that look, and when it ends. Until a resumed wait takes it over, whoever holds it
    gives it up with ``wait_dropped``."""

    __slots__ = ("keys", "seen", "deadline")

    def __init__(self) -> None:
        self.keys: list[str] | None = None  # None: no wait began (it found something, or raised)
        self.seen: tuple = ()
        self.deadline = 0.0


_local = threading.local()


@contextmanager
def wait_begun() -> Iterator[Begun]:
    """Within: a ``wait_for`` makes its first attempt and, if that finds nothing, returns it
    at once instead of sleeping, keeping its keys watched; the yielded ``Begun`` records
    where it stopped. So a session's thread looks once and hands the rest of the wait to a
    waiter thread (``wait_resumed``), which does not look again unless something was
    committed since: one look fewer for each get that waits."""
    begun = Begun()
    _local.begin = begun
    try:
        yield begun
    except BaseException:
        wait_dropped(begun)
        raise
    finally:
        _local.begin = None


@contextmanager
def wait_resumed(begun: Begun) -> Iterator[None]:
    """Within: the ``wait_for`` on ``begun``'s keys goes on from where it stopped (its first
    attempt only if a key's version moved since). A wait that does not take it over (it
    failed before waiting) gives up its keys on the way out."""
    _local.resume = begun
    try:
        yield
    finally:
        _local.resume = None
        wait_dropped(begun)


def wait_dropped(begun: Begun) -> None:
    """Stop watching a begun wait's keys (it will not go on)."""
    keys, begun.keys = begun.keys, None
    if keys is not None:
        _unwatch(keys)


def wait_for(
    attempt: Callable[[], T], *, keys: list[str], wait_s: float, due: Callable[[], float | None] | None = None
) -> T:
    """Call ``attempt`` until it returns something truthy or ``wait_s`` seconds pass;
    return its last result. ``attempt`` runs outside any database transaction. ``due``
    (called after an attempt that found nothing): in how many seconds an attempt may succeed
    with no commit to wake it (a peek-lock or a unit of work's deadline running out), or
    None; the wait is cut short then. Within ``wait_begun``, ``wait_resumed``: see them."""
    begin, _local.begin = getattr(_local, "begin", None), None  # for this wait only, not for one inside it
    resume, _local.resume = getattr(_local, "resume", None), None
    if resume is not None and resume.keys != keys:
        resume = None  # another wait's (not expected): this one starts afresh
    deadline = resume.deadline if resume is not None else time.monotonic() + max(wait_s, 0.0)
    bus = None
    if wait_s > 0:
        from .wakeup_bus import wakeup_bus

        bus = wakeup_bus()
        bus.listen()  # listening before the first attempt, so no commit after it goes unheard
    poll = POLL_FIRST_S
    watching = True  # this wait's to stop watching its keys when it ends
    if resume is not None:  # its keys are watched already: this wait takes them over
        resume.keys = None
    else:
        _watch(keys)  # before the first attempt's versions are read, until the wait ends
    try:
        while True:
            with _lock:
                seen = _seen(keys)
            if (
                resume is not None
                and seen == resume.seen
                and bus is not None
                and bus.listening
                and deadline > time.monotonic()
            ):  # nothing committed since the look that began the wait, and time to wait: no need to look
                result = None
            else:  # (a wait resumed after its time ran out, the hand-over slower than the wait, looks last)
                result = attempt()
            resume = None
            remaining = deadline - time.monotonic()
            if result or remaining <= 0:
                return result
            if begin is not None:  # the rest of the wait goes on elsewhere (wait_resumed)
                begin.keys, begin.seen, begin.deadline = keys, seen, deadline
                watching = False  # the keys stay watched: the Begun holds them
                return result
            listening = bus is not None and bus.listening
            timeout = remaining if listening else min(poll, remaining)
            if due is not None and (soon := due()) is not None:
                timeout = min(timeout, max(soon, 0.0))
            _slept(keys, seen, timeout)
            if not listening:
                poll = min(poll * 2, POLL_MAX_S)
    except BaseException:
        if begin is not None and begin.keys is None:  # not begun: another wait in the same call may begin it
            _local.begin = begin
        raise
    finally:
        if watching:
            _unwatch(keys)

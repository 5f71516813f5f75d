"""The wake-up bus: how a commit in one process reaches the waiters of every other.

One bus per process, chosen by ``BATON_WAKEUPS`` (config/settings/wakeups.py): Redis
publish/subscribe when Redis is configured, PostgreSQL ``LISTEN/NOTIFY`` on PostgreSQL,
local datagram sockets (``transactions.wakeup_sockets``) on SQLite. Every bus has one
listener thread per process, started by the first wait, which turns what it hears into
``wakeup_notify`` calls for this process's waiters; ``listening`` says whether it is
connected now (while it is not, waiters poll: ``transactions.wakeups``).

A message is the keys it concerns, separated by spaces; ``*`` wakes every waiter.
Notifications are scoped to one database: the channel (or socket directory) is named
after it, so platforms sharing a Redis or a ``var/`` never wake each other.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time

from .queries import default_db, hot_setting

from .wakeups import wakeup_notify, wakeup_notify_all

log = logging.getLogger(__name__)

#: How long the first wait waits for the listener to start listening before it polls.
LISTEN_START_S = 2.0
RECONNECT_FIRST_S = 0.05
RECONNECT_MAX_S = 2.0
#: How often a listener waiting for a message looks whether it is asked to stop.
STOP_CHECK_S = 1.0
#: Seconds without a message after which a listener checks its connection is alive.
IDLE_CHECK_S = 10.0
#: Longest message; a commit concerning more keys wakes every waiter instead.
MAX_PAYLOAD = 7000


def payload_encode(keys: list[str]) -> str:
    text = " ".join(keys)
    return text if len(text) <= MAX_PAYLOAD else "*"


#: When this process's listener last heard a notification (``time.monotonic_ns()``; benchmarks).
heard_ns = [0]


def payload_deliver(text: str) -> None:
    heard_ns[0] = time.monotonic_ns()
    keys = text.split()
    if "*" in keys:
        wakeup_notify_all()
    elif keys:
        wakeup_notify(keys)


def database_scope() -> str:
    """A short name for the database this process works on."""
    s = default_db().settings_dict
    ident = f"{s['ENGINE']}|{s.get('HOST') or ''}|{s.get('PORT') or ''}|{s['NAME']}"
    return hashlib.sha1(ident.encode()).hexdigest()[:16]


class WakeupBus:
    """No cross-process wake-ups: waiters poll (``BATON_WAKEUPS=poll``)."""

    name = "poll"
    #: A ``NOTIFY`` channel a committing transaction may notify itself, for a step whose keys
    #: are known only to the database until it has committed. No bus asks for it: on
    #: PostgreSQL a notifying commit holds the server's notification lock through its WAL
    #: flush (transactions/wakeup_postgres.py), so the keys come back in the step's answer
    #: and are published after the commit.
    channel_in_transaction: str | None = None

    def __init__(self) -> None:
        self.listening = False
        self._started = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()

    # --- sending ------------------------------------------------------------------------------
    def publish_after_commit(self, keys: list[str]) -> None:
        """After the commit, from the committing thread."""

    def listen(self) -> None:
        """Make sure this process listens (nothing to do here)."""

    def describe(self) -> str:
        return self.name


class ListenerBus(WakeupBus):
    """A bus with one listener thread per process, reconnecting when it loses its connection."""

    def listen(self) -> None:
        """Start this process's listener (once) and wait a moment for it to listen."""
        if self._thread is None:
            with self._lock:
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name=f"baton-wakeups-{self.name}", daemon=True)
                    self._thread.start()
        self._started.wait(LISTEN_START_S)

    def _run(self) -> None:
        """Connect, listen until the connection fails, reconnect with a growing pause."""
        pause = RECONNECT_FIRST_S
        while not self._stopping.is_set():
            try:
                self.connect()
            except Exception as exc:  # noqa: BLE001 - any failure: poll, and retry later
                log.warning("wake-ups (%s): cannot listen: %s", self.name, exc)
                self._started.set()
                self._stopping.wait(pause)  # back-off before reconnecting
                pause = min(pause * 2, RECONNECT_MAX_S)
                continue
            pause = RECONNECT_FIRST_S
            self._set_listening(True)
            try:
                self.receive_forever()
            except Exception as exc:  # noqa: BLE001
                log.warning("wake-ups (%s): listener lost: %s", self.name, exc)
            finally:
                self._set_listening(False)
                self.disconnect()

    def stop(self, *, timeout: float = 5.0) -> None:
        """Stop listening: the listener lets go of its connection within a second."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _set_listening(self, value: bool) -> None:
        self.listening = value
        self._started.set()
        wakeup_notify_all()  # either way every waiter re-checks (and picks its way of waiting)

    def connect(self) -> None:
        """Connect and start listening (return once listening)."""
        raise NotImplementedError

    def receive_forever(self) -> None:
        """Deliver what arrives (``payload_deliver``) until the connection fails or ``stopping``
        is set (looked at least every ``STOP_CHECK_S``)."""
        raise NotImplementedError

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def disconnect(self) -> None:
        pass


_buses: dict[tuple, WakeupBus] = {}
_buses_lock = threading.Lock()
# a forked child (a prefork worker) has none of its parent's listener threads: it starts its own
os.register_at_fork(after_in_child=_buses.clear)


def wakeup_bus() -> WakeupBus:
    """This process's bus for the default database (one per database and setting)."""
    db = default_db()
    choice = hot_setting("BATON_WAKEUPS")
    redis_url = hot_setting("BATON_WAKEUP_REDIS_URL")
    key = (choice, redis_url, db.vendor, db.settings_dict["NAME"])
    bus = _buses.get(key)
    if bus is None:
        with _buses_lock:
            bus = _buses.get(key)
            if bus is None:
                bus = _buses[key] = _bus_new(choice=choice, redis_url=redis_url, vendor=db.vendor)
    return bus


def wakeup_buses_stop() -> None:
    """Stop every listener of this process and forget the buses (a test session's end, before
    its database is dropped: a PostgreSQL listener is connected to it)."""
    with _buses_lock:
        buses = list(_buses.values())
        _buses.clear()
    for bus in buses:
        if isinstance(bus, ListenerBus):
            bus.stop()


def _bus_new(*, choice: str, redis_url: str, vendor: str) -> WakeupBus:
    if choice == "auto":
        choice = "redis" if redis_url else "postgres" if vendor == "postgresql" else "sockets"
    if choice == "redis":
        from .wakeup_redis import RedisBus

        return RedisBus(url=redis_url, scope=database_scope())
    if choice == "postgres":
        from .wakeup_postgres import PostgresBus

        return PostgresBus(params=default_db().get_connection_params())
    if choice == "sockets":
        from .wakeup_sockets import SocketBus

        return SocketBus(scope=database_scope())
    return WakeupBus()

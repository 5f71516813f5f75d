"""Wake-ups over PostgreSQL ``LISTEN/NOTIFY``: after a transaction that concerned some keys
has committed, the committing thread hands them to this process's publisher, a thread with
a connection of its own that ``NOTIFY``s them (what has gathered meanwhile in one
notification, ``synchronous_commit`` off: a wake-up promises nothing that must be on disk);
each process keeps one connection that ``LISTEN``s and hands what it hears to its waiters.

Not inside the committing transaction: PostgreSQL serialises every transaction that has
notified, cluster-wide, from its commit until after its commit record is flushed (a
heavyweight lock on "database 0" taken in ``PreCommit_Notify``, so that notifications
queue in commit order). A notifying commit therefore waits for the WAL flushes of all the
notifying commits before it, one at a time: no group commit, and commits per second bounded
by one over the time of a flush (docs/performance.md, "PostgreSQL: the notification lock").
The publisher's own transactions hold that lock only for as long as they take, since they
do not wait for a flush.

A publication the publisher cannot send is lost (logged), as with Redis: the commit stands;
a listener that lost its connection meanwhile wakes every waiter when it reconnects."""

from __future__ import annotations

import contextlib
import logging
import queue
import threading

import psycopg
from psycopg import pq

from . import queries
from .wakeup_bus import IDLE_CHECK_S, MAX_PAYLOAD, STOP_CHECK_S, ListenerBus, payload_deliver

log = logging.getLogger(__name__)

_NOT_FOR_PSYCOPG = ("context", "cursor_factory", "prepare_threshold", "server_side_binding", "pool", "assume_role")


_NOTIFY = b"SELECT pg_notify($1, p) FROM unnest($2::text[]) p"
_CHANNEL = queries.WAKEUP_CHANNEL.encode()


def payloads_split(keys: list[str]) -> list[str]:
    """The keys (each once, in order) as few notifications' payloads of at most
    ``MAX_PAYLOAD`` characters each."""
    payloads, current, size = [], [], 0
    for key in dict.fromkeys(keys):
        if current and size + 1 + len(key) > MAX_PAYLOAD:
            payloads.append(" ".join(current))
            current, size = [], 0
        size += len(key) + (1 if current else 0)
        current.append(key)
    if current:
        payloads.append(" ".join(current))
    return payloads


class PostgresBus(ListenerBus):
    name = "postgres"

    def __init__(self, *, params: dict) -> None:
        super().__init__()
        self.params = {k: v for k, v in params.items() if k not in _NOT_FOR_PSYCOPG}
        self.conn: psycopg.Connection | None = None
        self._outbox: queue.SimpleQueue[list[str] | None] = queue.SimpleQueue()  # None: stop
        self._publisher: threading.Thread | None = None
        self._publisher_lock = threading.Lock()
        #: The backend of the publisher's connection: what it notifies, this process's
        #: waiters were told already (``wakeup_notify_committed``), so its listener passes over
        #: it, as the sockets bus does not send to itself.
        self._own_pid: int | None = None

    def publish_after_commit(self, keys: list[str]) -> None:
        if self._publisher is None:
            with self._publisher_lock:
                if self._publisher is None:
                    self._publisher = threading.Thread(
                        target=self._publish_forever, name="baton-wakeups-postgres-publisher", daemon=True
                    )
                    self._publisher.start()
        self._outbox.put(keys)

    def stop(self, *, timeout: float = 5.0) -> None:
        """Stop listening, and the publisher once it has sent what it holds (its connection
        closed: a test session drops the database next)."""
        super().stop(timeout=timeout)
        publisher = self._publisher
        if publisher is not None:
            self._outbox.put(None)
            publisher.join(timeout)

    def _publish_forever(self) -> None:
        conn: psycopg.Connection | None = None
        stopping = False
        while not stopping:
            keys = self._outbox.get()
            stopping = keys is None
            keys = list(keys or [])
            with contextlib.suppress(queue.Empty):
                while True:  # what else has gathered goes in the same notification
                    more = self._outbox.get_nowait()
                    stopping = stopping or more is None
                    keys.extend(more or [])
            if keys:
                conn = self._publish(conn, keys)
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()

    def _publish(self, conn: psycopg.Connection | None, keys: list[str]) -> psycopg.Connection | None:
        """Notify the keys; the connection to use next time (None after a failure)."""
        try:
            if conn is None or conn.closed:
                conn = psycopg.connect(**self.params, autocommit=True, connect_timeout=10)
                conn.execute("SET synchronous_commit TO off")
                self._own_pid = conn.info.backend_pid
            # through libpq itself: psycopg's cursor took 83 µs of this thread's CPU per call
            # against 19 (docs/performance.md, "PostgreSQL: whose CPU a unit of work takes")
            result = conn.pgconn.exec_params(_NOTIFY, [_CHANNEL, queries.pg_array(payloads_split(keys)).encode()], None)
            if result.status != pq.ExecStatus.TUPLES_OK:
                raise psycopg.OperationalError(result.error_message.decode("utf-8", "replace").strip())
            return conn
        except psycopg.Error as exc:
            log.warning("wake-ups (postgres): publish failed: %s", exc)
            if conn is not None:
                with contextlib.suppress(Exception):
                    conn.close()
            return None

    def connect(self) -> None:
        self.conn = psycopg.connect(**self.params, autocommit=True, connect_timeout=10)
        self.conn.execute(f"LISTEN {queries.WAKEUP_CHANNEL}")

    def receive_forever(self) -> None:
        conn = self.conn
        idle = 0.0
        while not self.stopping:
            heard = False
            for notify in conn.notifies(timeout=STOP_CHECK_S):
                heard = True
                if notify.pid != self._own_pid:
                    payload_deliver(notify.payload)
            idle = 0.0 if heard else idle + STOP_CHECK_S
            if idle >= IDLE_CHECK_S:
                conn.execute("SELECT 1")  # a dead connection raises here
                idle = 0.0

    def disconnect(self) -> None:
        if self.conn is not None:
            with contextlib.suppress(Exception):  # already broken
                self.conn.close()
            self.conn = None

    def describe(self) -> str:
        return f"PostgreSQL LISTEN/NOTIFY on {queries.WAKEUP_CHANNEL}"

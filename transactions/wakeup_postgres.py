"""Wake-ups over PostgreSQL ``LISTEN/NOTIFY``: a committing transaction sends ``NOTIFY``
inside itself (``queries.wakeup_notify``), so the notification is delivered exactly when
it commits and never if it rolls back; each process keeps one connection that
``LISTEN``s and hands what it hears to its waiters."""

from __future__ import annotations

import contextlib

import psycopg

from . import queries
from .wakeup_bus import IDLE_CHECK_S, STOP_CHECK_S, ListenerBus, payload_deliver, payload_encode

_NOT_FOR_PSYCOPG = ("context", "cursor_factory", "prepare_threshold", "server_side_binding", "pool", "assume_role")


class PostgresBus(ListenerBus):
    name = "postgres"
    channel_in_transaction = queries.WAKEUP_CHANNEL

    def __init__(self, *, params: dict) -> None:
        super().__init__()
        self.params = {k: v for k, v in params.items() if k not in _NOT_FOR_PSYCOPG}
        self.conn: psycopg.Connection | None = None

    def publish_in_transaction(self, keys: list[str]) -> None:
        queries.wakeup_notify(payload=payload_encode(keys))

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

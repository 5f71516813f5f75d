"""Django's SQLite backend, with every write queued on the database's writer lock
(:mod:`transactions.sqlite_writer`): a write transaction before ``BEGIN IMMEDIATE``,
released at its ``COMMIT``, ``ROLLBACK`` or the connection's close; a writing statement
outside any transaction (autocommit: SQLite makes it a transaction of its own) for the
statement.

The connection's ``synchronous`` level: ``FULL`` (the settings' ``init_command``) for every
statement outside the engine's steps. A step runs at ``NORMAL`` (transactions/durability.py)
and leaves the connection there, so that consecutive steps do not switch it twice each;
``FULL`` is put back before the first statement that is not a step's (``durable_restored``:
the cursor below, the engine's cursor outside a transaction), always outside a transaction,
where SQLite allows the switch."""

from __future__ import annotations

import re

from django.conf import settings
from django.db.backends.sqlite3 import base

from ...sqlite_writer import connection_writer
from ...wal_checkpoint import BACKSTOP, checkpointer_started

#: A statement that may write: SQLite takes its write lock for it. Reads (``SELECT``,
#: ``PRAGMA``, ``EXPLAIN``) are never queued: in WAL mode they do not wait for writers.
_WRITES = re.compile(r"\s*(INSERT|UPDATE|DELETE|REPLACE|CREATE|DROP|ALTER|VACUUM|REINDEX|ANALYZE)\b", re.IGNORECASE)
_WITH_WRITES = re.compile(r"\s*WITH\b.*\b(INSERT|UPDATE|DELETE|REPLACE)\b", re.IGNORECASE | re.DOTALL)


def _writes(query: str) -> bool:
    return bool(_WRITES.match(query) or _WITH_WRITES.match(query))


class _Cursor(base.SQLiteCursorWrapper):
    """Django's cursor; a write outside a transaction runs holding the writer lock."""

    db = None  # the DatabaseWrapper, set by create_cursor

    def execute(self, query, params=None):
        db = self.db
        if db.baton_relaxed and not db.baton_in_step:
            db.durable_restored()
        if self.connection.in_transaction or not _writes(query):
            return super().execute(query, params)
        with db.writer_held():
            return super().execute(query, params)

    def executemany(self, query, param_list):
        db = self.db
        if db.baton_relaxed and not db.baton_in_step:
            db.durable_restored()
        if self.connection.in_transaction or not _writes(query):
            return super().executemany(query, param_list)
        with db.writer_held():
            return super().executemany(query, param_list)


class _Held:
    __slots__ = ("lock",)

    def __init__(self, lock) -> None:
        self.lock = lock

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc) -> None:
        self.lock.release()


class DatabaseWrapper(base.DatabaseWrapper):
    #: The connection runs at ``synchronous=NORMAL``, as an engine step left it.
    baton_relaxed = False
    #: An engine step is under way: its statements run at the level the step chose.
    baton_in_step = False

    def get_new_connection(self, conn_params):
        connection = super().get_new_connection(conn_params)
        self.baton_relaxed = False  # the init_command's FULL
        pages = settings.BATON_SQLITE_CHECKPOINT_PAGES
        if checkpointer_started(str(self.settings_dict["NAME"]), pages=pages):
            # the process's checkpointer copies the log; SQLite's own only as a backstop
            connection.execute(f"PRAGMA wal_autocheckpoint={int(pages) * BACKSTOP}")
        return connection

    def durable_restored(self) -> None:
        """``synchronous=FULL`` again after the engine's steps, before a statement of
        anything else. Never inside a transaction: only a step leaves the connection
        relaxed, and every other transaction's first statement comes here first."""
        if self.baton_relaxed and not self.baton_in_step and self.connection is not None:
            if self.connection.in_transaction:  # the invariant above broken: fail loudly, not silently relaxed
                raise RuntimeError("synchronous=NORMAL left on inside a transaction that is not an engine step")
            self.connection.execute("PRAGMA synchronous=FULL")
            self.baton_relaxed = False

    def create_cursor(self, name=None):
        cursor = self.connection.cursor(factory=_Cursor)
        cursor.db = self
        return cursor

    def writer_held(self) -> _Held:
        """The writer lock for one autocommit statement (``with``)."""
        lock, timeout_s = connection_writer(self)
        lock.acquire(timeout_s=timeout_s)
        return _Held(lock)

    def writer_acquire(self) -> None:
        lock, timeout_s = connection_writer(self)  # the engine's own steps take the same lock
        lock.acquire(timeout_s=timeout_s)
        self._writer_held = lock

    def writer_release(self) -> None:
        lock, self._writer_held = getattr(self, "_writer_held", None), None
        if lock is not None:
            lock.release()

    def _start_transaction_under_autocommit(self):
        self.writer_acquire()
        try:
            super()._start_transaction_under_autocommit()
        except BaseException:
            self.writer_release()
            raise

    def _commit(self):
        try:
            return super()._commit()
        finally:
            self.writer_release()

    def _rollback(self):
        try:
            return super()._rollback()
        finally:
            self.writer_release()

    def _close(self):
        try:
            return super()._close()
        finally:
            self.writer_release()

"""Durable and relaxed database transactions.

A reply that says committed means on disk (docs/performance.md). The connection's default
is durable: SQLite ``synchronous=FULL`` in WAL mode (the WAL is synced at every commit),
PostgreSQL ``synchronous_commit=on``. A database transaction whose commit promises nothing
to anyone (a begin, an uncommitted put, a get under a unit of work, a rollback) may skip
the sync: ``engine_step(durable=False)``. Skipping is safe because the log is sequential:
the next durable commit's sync puts everything written before it on disk too, and what a
power failure could lose meanwhile is only work that restart recovery rolls back anyway.

SQLite decides at ``COMMIT`` by the connection's ``synchronous`` level, which can only be
changed outside a transaction: an engine step lowers it to ``NORMAL`` before ``BEGIN``
and leaves it there for the thread's next step; ``FULL`` comes back before the first
statement of anything else (transactions/backends/sqlite3: ``durable_restored``), so every
other write, ORM code included, stays durable. Each switch is a statement, and each
statement lets go of the interpreter's lock and takes it again: in a chain of pipelined
puts, two per step were as much of a session thread's time as the step's ``COMMIT``
(docs/performance.md). A durable step then syncs the WAL itself after
the write lock is released (``transactions.wal_sync``: group commit, one sync for every
commit finished before it) and answers only after that sync. PostgreSQL takes ``SET LOCAL
synchronous_commit`` inside the transaction and groups concurrent commits by itself.

An outermost step drives the database transaction itself (``BEGIN IMMEDIATE`` / ``COMMIT``
on the driver's connection; on PostgreSQL ``BEGIN`` travels with the step's first
statement) instead of going through ``atomic()``, which costs several times the
statements of a short step in Python. Django is told that a transaction is open
(``in_atomic_block``), so ORM code inside the step nests in it and ``on_commit`` hooks wait
for it; they run after the commit (and a durable step's sync). Inside a caller's atomic
block ``atomic()`` is used, so that a nested step leaves the level to the outermost
transaction (durable unless it said otherwise). Whether queries are logged
(``CaptureQueriesContext``, DEBUG) changes nothing here: the step's ``BEGIN``, statements
and ``COMMIT`` are recorded as they are sent (``transactions.seam.statements_logged``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, contextmanager
from typing import Iterator

from django.conf import settings
from django.db import transaction as db

from .seam import default_db, deferred, hot_setting, raised_as_django, seam, statements_logged
from .sqlite_writer import connection_writer
from .wal_sync import Ticket, wal_commit_finished, wal_synced


#: PostgreSQL: within an engine step the planner leaves out sequential and bitmap scans, so
#: that the generic plan a hot-path statement gets at its first run (transactions/prepared.py),
#: or when its table is next analysed, reads through the index the statement was written for
#: whatever the statistics said then (an empty table's made a get read a deep queue whole:
#: docs/performance.md, "PostgreSQL: a plan made for an empty table"). Costs, not bans: a
#: statement no index serves still scans. Only inside the step: the ORM's statements
#: elsewhere keep the server's defaults.
PLANNED_FOR_INDEXES = ("SET LOCAL enable_seqscan TO off", "SET LOCAL enable_bitmapscan TO off")
#: The defaults back, at the end of a step nested in a caller's database transaction.
PLANNED_AS_BEFORE = ("SET LOCAL enable_seqscan TO DEFAULT", "SET LOCAL enable_bitmapscan TO DEFAULT")


_deferred = threading.local()


class Step:
    """What an engine step's work may say about its commit once it knows what it did
    (``with engine_step(durable=True) as step``): :meth:`promises_nothing` when the work
    turned out to promise nobody anything on disk (a commit held on its upstreams, see
    transactions/manager.py), so the step's commit skips the sync. Only an outermost step
    heeds it; a step nested in a caller's database transaction leaves durability to the
    caller."""

    __slots__ = ("durable",)

    def __init__(self, durable: bool) -> None:
        self.durable = durable

    def promises_nothing(self) -> None:
        self.durable = False


@contextmanager
def durability_deferred(until_synced: Callable[[Ticket], None]) -> Iterator[None]:
    """Within, on this thread: a durable SQLite step does not wait for its sync. It hands
    ``until_synced`` its commit's ticket, before its ``on_commit`` hooks run and before it
    returns; the caller holds back every reply it sends from then on until
    ``transactions.wal_sync.wal_when_synced`` calls back (a STOMP connection's frames:
    stomp_server/protocol.py). What the step committed is visible to others before its sync
    either way; what waits is only the word that it is on disk. PostgreSQL's commit is on
    disk when it returns: nothing is handed over there."""
    previous = getattr(_deferred, "until_synced", None)
    _deferred.until_synced = until_synced
    try:
        yield
    finally:
        _deferred.until_synced = previous


def engine_step(*, durable: bool) -> AbstractContextManager[Step]:
    """One database transaction of the engine (``with engine_step(...) as step``);
    ``durable`` says whether its commit must be on disk before the caller answers (the work
    may lower it: :class:`Step`)."""
    conn = default_db()
    if not engine_step_outermost():
        return _atomic_step(conn, durable=durable)
    if conn.vendor == "sqlite":
        return _sqlite_step(conn, durable=durable)
    return _postgres_step(conn, durable=durable)


def engine_step_outermost() -> bool:
    """Whether an engine step begun now drives its own database transaction (not nested
    in a caller's): only then is its ``COMMIT`` its own, sent with its statements."""
    conn = default_db()
    if conn.connection is None:
        conn.ensure_connection()  # its autocommit is the database's once connected
    return not (conn.in_atomic_block or not conn.autocommit)


@contextmanager
def _atomic_step(conn, *, durable: bool) -> Iterator[Step]:
    """The step through Django's ``atomic()`` (nested in a caller's database transaction)."""
    outermost = not conn.in_atomic_block
    if conn.vendor == "sqlite":
        relax = outermost and not durable and not settings.BATON_SKIP_COMMIT_SYNC
        if relax:
            conn.ensure_connection()
            if not conn.baton_relaxed:
                conn.connection.execute("PRAGMA synchronous=NORMAL")
                conn.baton_relaxed = True
            conn.baton_in_step = True  # the atomic block's BEGIN keeps it
        try:
            with db.atomic():
                yield Step(durable)  # what its work says is not heeded: the caller's transaction decides
        finally:
            if relax:
                conn.baton_in_step = False
                conn.durable_restored()  # this rare path puts it back at once
        return
    # planned as in an outermost step; put back for the caller's own statements after it
    # (a failed step's savepoint undoes them itself)
    planned = conn.vendor == "postgresql"
    with db.atomic():
        seam().step_begun()
        if outermost and not durable and conn.vendor == "postgresql":
            deferred("SET LOCAL synchronous_commit TO OFF")  # sent with the first statement
        for sql in PLANNED_FOR_INDEXES if planned else ():
            deferred(sql)
        conn.execute_wrappers.append(_deferred_first)
        try:
            yield Step(durable)  # not heeded, as above
        except BaseException:
            seam().step_ended(keep=False)
            raise
        finally:
            conn.execute_wrappers.remove(_deferred_first)
        for sql in PLANNED_AS_BEFORE if planned else ():
            deferred(sql)
        seam().step_ended(keep=True)


def _opened(conn) -> None:
    """Tell Django a transaction is open on ``conn`` (as ``atomic()`` would)."""
    conn.commit_on_exit = True
    conn.needs_rollback = False
    conn.autocommit = False
    conn.in_atomic_block = True


def _closed(conn) -> None:
    conn.in_atomic_block = False
    conn.autocommit = True


def _rolled_back(conn, raw_rollback) -> None:
    """Undo the open transaction after an error in the step; drop the connection if even
    that fails (as ``atomic()`` does)."""
    conn.run_on_commit = []
    started = time.monotonic()
    try:
        with conn.wrap_database_errors:
            raw_rollback()
        statements_logged(conn, [("ROLLBACK", None)], started)
    except Exception:
        _closed(conn)
        conn.close()
        return
    _closed(conn)


@contextmanager
def _sqlite_step(conn, *, durable: bool) -> Iterator[Step]:
    conn.close_if_health_check_failed()
    if conn.connection is None:
        conn.ensure_connection()
    raw = conn.connection
    relaxed = not hot_setting("BATON_SKIP_COMMIT_SYNC")
    if relaxed and not conn.baton_relaxed:  # left so after the step: FULL comes back before anything else runs
        raw.execute("PRAGMA synchronous=NORMAL")
        conn.baton_relaxed = True
    conn.baton_in_step = True
    # threads and processes queue here for SQLite's write lock (transactions/sqlite_writer.py)
    writer, timeout_s = connection_writer(conn)
    try:
        writer.acquire(timeout_s=timeout_s)
        try:
            started = time.monotonic()
            try:
                raw.execute("BEGIN IMMEDIATE")
            except Exception:
                raised_as_django(conn)
            statements_logged(conn, [("BEGIN IMMEDIATE", None)], started)
            _opened(conn)
            step = Step(durable)
            try:
                yield step
                if conn.needs_rollback:  # an inner atomic block failed and was caught: undo all
                    _rolled_back(conn, raw.rollback)
                    return
                started = time.monotonic()
                try:
                    raw.commit()
                except Exception:
                    raised_as_django(conn)
                statements_logged(conn, [("COMMIT", None)], started)
            except BaseException:
                _rolled_back(conn, raw.rollback)
                raise
            _closed(conn)
        finally:
            writer.release()
    finally:
        conn.baton_in_step = False
    if step.durable and relaxed:
        until_synced = getattr(_deferred, "until_synced", None)
        if until_synced is None:
            wal_synced(conn.settings_dict["NAME"])
        else:  # the caller holds back its replies until the sync, and goes on meanwhile
            until_synced(wal_commit_finished(conn.settings_dict["NAME"]))
    conn.run_and_clear_commit_hooks()


@contextmanager
def _postgres_step(conn, *, durable: bool) -> Iterator[Step]:
    conn.close_if_health_check_failed()
    if conn.connection is None:
        conn.ensure_connection()
    raw = conn.connection
    seam().step_begun()
    deferred("BEGIN")  # sent with the first statement
    if not durable:
        deferred("SET LOCAL synchronous_commit TO OFF")
    for sql in PLANNED_FOR_INDEXES:
        deferred(sql)
    _opened(conn)
    conn.execute_wrappers.append(_deferred_first)  # ORM statements in the step send BEGIN first

    def rollback() -> None:
        with raw.cursor() as c:
            c.execute("ROLLBACK")

    step = Step(durable)
    try:
        yield step
        if conn.needs_rollback:
            seam().step_ended(keep=False)
            _rolled_back(conn, rollback)
            return
        if durable and not step.durable:  # SET LOCAL holds until the COMMIT: the work said so late
            deferred("SET LOCAL synchronous_commit TO OFF")
        deferred("COMMIT")  # with the step's last writes, in one round trip
        seam().step_ended(keep=True)
    except BaseException:
        seam().step_ended(keep=False)
        _rolled_back(conn, rollback)
        raise
    finally:
        conn.execute_wrappers.remove(_deferred_first)
    _closed(conn)
    conn.run_and_clear_commit_hooks()


def _deferred_first(execute, sql, params, many, context):
    """Before a statement through Django's cursor inside a PostgreSQL step: send what the
    step has deferred (its ``BEGIN`` first), so that the statement runs inside it."""
    seam().flush()
    return execute(sql, params, many, context)

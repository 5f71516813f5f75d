"""The engine's transaction seam: the one way the hot path (``transactions.queries``,
``brokers.queries``, and the stores that write with them) talks to the database, the same
in production and in tests.

One ``Seam`` per thread (``seam()``), on that thread's connection to the default database.
It holds what an engine step (``transactions.durability.engine_step``) collects between
round trips, and nothing is kept on Django's connection object:

* ``pending``: statements whose result nothing reads before the step commits (the journal,
  ``SET LOCAL``, ``BEGIN``, ``COMMIT``). On PostgreSQL, inside a step, ``defer`` queues
  them and the next statement sent (``Cursor.execute``, or ``flush`` at the step's end)
  carries them in the same round trip; elsewhere, and on SQLite, they run at once. A
  deferred statement may ask for its rows (``rows``), read once it has run: the engine's
  functions on PostgreSQL answer so, after the ``COMMIT`` sent with them.

Statements use ``%s`` placeholders on both databases (turned into SQLite's ``?`` here,
once per text). They go to the driver's own cursor, not Django's wrapper, which costs more
in Python per statement than the database spends running it (docs/performance.md); errors
are still Django's. Whether Django logs queries (``CaptureQueriesContext``, DEBUG) decides
only whether each statement is recorded in its log as it is sent (``statements_logged``),
never which statements are sent.

Step lifecycle (``transactions.durability``): ``step_begun`` → statements (``cursor``,
``defer``) → ``step_ended(keep=True)`` (the pending ones sent, with the step's ``COMMIT``)
or ``step_ended(keep=False)`` (dropped with the step).
"""

from __future__ import annotations

import logging
import threading
import time

from django.conf import settings
from django.core.signals import setting_changed
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.sqlite3.base import FORMAT_QMARK_REGEX
from django.dispatch import receiver

from .prepared import prepared_sql

#: Settings the hot path reads, read once: each read through Django's ``settings`` object
#: costs a few calls. Forgotten whenever settings change through ``override_settings`` (and
#: pytest-django's ``settings``), which send ``setting_changed``; a setting assigned
#: directly (``settings.X = ...``) is not seen.
_hot_settings: dict[str, object] = {}


def hot_setting(name: str):
    """The value of setting ``name``, as ``getattr(settings, name)``, read once."""
    try:
        return _hot_settings[name]
    except KeyError:
        value = _hot_settings[name] = getattr(settings, name)
        return value


@receiver(setting_changed)
def _hot_settings_forgotten(**kwargs) -> None:
    _hot_settings.clear()


def queries_logged(db) -> bool:
    """Django's ``db.queries_logged`` (``CaptureQueriesContext``, DEBUG), read cheaply. It
    decides only whether statements are recorded, never which statements run."""
    return db.force_debug_cursor or hot_setting("DEBUG")


_logger = logging.getLogger("django.db.backends")


def statements_logged(db, statements, started: float) -> None:
    """Record ``statements`` (``(sql, params)`` pairs sent in one round trip since
    ``started``, a ``time.monotonic()``) in Django's query log as its debug cursor records
    one, one entry per statement, each with the round trip's time: what tests that count
    statements count is what production sends (a text's ``PREPARE``, made once per
    connection, is not counted: transactions/prepared.py). Only while queries are logged."""
    if not queries_logged(db):
        return
    duration = time.monotonic() - started
    for sql, params in statements:
        db.queries_log.append({"sql": sql, "time": "%.3f" % duration})
        _logger.debug(
            "(%.3f) %s; args=%s; alias=%s",
            duration,
            sql,
            params,
            db.alias,
            extra={"duration": duration, "sql": sql, "params": params, "alias": db.alias},
        )


def raised_as_django(db) -> None:
    """Raise the exception being handled as Django's ``wrap_database_errors`` would (a
    driver's error as Django's, the connection told an error occurred): only on the way out
    of a failed statement, so that a statement that succeeds does not pay for the wrapper."""
    with db.wrap_database_errors:
        raise


_qmark: dict[str, str] = {}


def _qmarked(sql: str) -> str:
    """SQLite: ``sql``'s ``%s`` placeholders as ``?``, converted once per text."""
    converted = _qmark.get(sql)
    if converted is None:
        converted = FORMAT_QMARK_REGEX.sub("?", sql).replace("%%", "%")
        if len(_qmark) < 4096:
            _qmark[sql] = converted
    return converted


class Seam:
    """The engine's state on one thread's connection (see the module's docstring)."""

    __slots__ = ("db", "sqlite", "pending")

    def __init__(self, db) -> None:
        self.db = db
        self.sqlite = db.vendor == "sqlite"
        #: PostgreSQL, inside a step: the deferred statements, ``(sql, params)`` or
        #: ``(sql, params, rows)``; None outside a step (a deferred statement runs at once).
        self.pending: list[tuple] | None = None

    def cursor(self) -> Cursor:
        """A cursor for one hot-path function (``with seam().cursor() as c``)."""
        return Cursor(self)

    def defer(self, sql: str, params=(), *, rows: list | None = None) -> None:
        """A write whose result nothing reads before the database transaction commits. On
        PostgreSQL, inside a step, sent with the step's next statement or at its end;
        otherwise run now. No ``%`` but placeholders in ``sql``. ``rows``: a list its rows
        are added to once it has run (a step that reads its answer after its ``COMMIT``)."""
        if self.pending is not None and not self.sqlite:
            self.pending.append((sql, list(params)) if rows is None else (sql, list(params), rows))
            return
        with self.cursor() as c:
            c.execute(sql, params)
            if rows is not None:
                rows.extend(c.fetchall())

    def step_begun(self) -> None:
        """An engine step begins: deferred statements are collected from here on."""
        if self.pending:
            self.flush()
        self.pending = []

    def flush(self) -> None:
        """Send the deferred statements now (a step's end, or before a statement that
        cannot carry them: one through Django's cursor, a savepoint)."""
        pending = self.pending
        if not pending:
            return
        db = self.db
        self.pending = []
        sql, params = prepared_sql(
            db.connection, "; ".join(entry[0] for entry in pending), [v for entry in pending for v in entry[1]]
        )
        started = time.monotonic()
        try:
            with db.wrap_database_errors:
                raw = db.connection.cursor()
                try:
                    raw.execute(sql, params)
                    if any(len(entry) > 2 for entry in pending):
                        for entry in pending:
                            _rows_kept(raw, entry)
                            raw.nextset()
                finally:
                    raw.close()
        finally:
            statements_logged(db, [entry[:2] for entry in pending], started)

    def step_ended(self, *, keep: bool) -> None:
        """An engine step ends: its deferred statements are sent (``keep``) or dropped. Either
        way, statements deferred after it run at once, even when sending failed."""
        try:
            if keep:
                self.flush()
        finally:
            self.pending = None


def _rows_kept(raw, entry: tuple) -> None:
    """The rows of a deferred statement that asked for them (``defer``'s ``rows``), from the
    driver cursor positioned on that statement's result."""
    if len(entry) > 2:
        entry[2].extend(raw.fetchall())


class Cursor:
    """The driver's own cursor for one hot-path function: ``execute`` sends the seam's
    pending statements first, in the same round trip (PostgreSQL), and the caller reads its
    own statement's result. Statements are planned once per connection on PostgreSQL
    (transactions/prepared.py)."""

    __slots__ = ("seam", "raw")

    def __init__(self, seam: Seam) -> None:
        db = seam.db
        if db.connection is None:
            db.ensure_connection()
        self.seam = seam
        self.raw = db.connection.cursor()

    def execute(self, sql: str, params=()):
        db = self.seam.db
        if not queries_logged(db):
            return self._execute(sql, params)
        pending = [] if self.seam.sqlite else list(self.seam.pending or ())
        started = time.monotonic()
        try:
            return self._execute(sql, params)
        finally:
            statements_logged(db, [entry[:2] for entry in pending] + [(sql, params)], started)

    def _execute(self, sql: str, params):
        seam = self.seam
        db = seam.db
        if seam.sqlite:
            if not db.connection.in_transaction and hasattr(db, "writer_held"):
                return self._autocommit_execute(sql, params)
            try:
                return self.raw.execute(_qmarked(sql), params)
            except Exception:
                raised_as_django(db)
        pending = seam.pending
        if pending:  # send the deferred statements in the same round trip
            seam.pending = []
            sql = "; ".join([entry[0] for entry in pending] + [sql])
            params = [value for entry in pending for value in entry[1]] + list(params)
        sql, params = prepared_sql(db.connection, sql, params)
        try:
            result = self.raw.execute(sql, params)
            for entry in pending or ():
                _rows_kept(self.raw, entry)
                self.raw.nextset()  # the caller reads its own statement's result
        except Exception:
            raised_as_django(db)
        return result

    def _autocommit_execute(self, sql: str, params):
        """SQLite, outside a transaction: a write holds the database's writer lock for the
        statement, as every other write does (transactions/backends/sqlite3)."""
        from .backends.sqlite3.base import _writes

        db = self.seam.db
        if db.baton_relaxed:  # after an engine step: FULL again first (transactions/backends/sqlite3)
            db.durable_restored()
        with db.wrap_database_errors:
            if not _writes(sql):
                return self.raw.execute(_qmarked(sql), params)
            with db.writer_held():
                return self.raw.execute(_qmarked(sql), params)

    def fetchone(self):
        return self.raw.fetchone()

    def nextset(self):
        return self.raw.nextset()

    def fetchall(self):
        return self.raw.fetchall()

    @property
    def rowcount(self) -> int:
        return self.raw.rowcount

    @property
    def lastrowid(self):
        return self.raw.lastrowid

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.raw.close()


_thread = threading.local()


def default_db():
    """This thread's connection to the default database: Django's ``connections["default"]``,
    looked up once per thread (through ``asgiref``'s ``Local`` it costs a dozen calls, and the
    hot path asked for it some thirty times per unit of work). Django keeps one connection
    object per thread for the thread's life, reconnecting it in place."""
    try:
        return _thread.db
    except AttributeError:
        db = _thread.db = connections[DEFAULT_DB_ALIAS]
        return db


def seam() -> Seam:
    """This thread's seam, on ``default_db()``."""
    try:
        return _thread.seam
    except AttributeError:
        made = _thread.seam = Seam(default_db())
        return made


# The seam's operations as functions, for the statement modules and the stores.


def cursor() -> Cursor:
    """A cursor on the default database for one hot-path function (``with cursor() as c``)."""
    return seam().cursor()


def deferred(sql: str, params=(), *, rows: list | None = None) -> None:
    """``Seam.defer`` on this thread's seam."""
    seam().defer(sql, params, rows=rows)


def deferred_flush() -> None:
    """``Seam.flush`` on this thread's seam: send the deferred statements now."""
    seam().flush()

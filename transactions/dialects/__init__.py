"""The database, chosen once: what the engine's transaction, link and journal statements
(``transactions.queries``) do differently on SQLite and on PostgreSQL, one module each
(``sqlite``, ``postgresql``), in the style of ``transactions.resources``. Each module holds
its statements as named constants, with the locks each takes written beside it, and the
operations whose sequence of statements differs as functions of the same name. Shared
functions never ask which database they run on: they ask ``dialect()``.

``brokers.dialects`` is the same seam for the message and queue statements."""

from __future__ import annotations

from typing import Protocol, Sequence


class Dialect(Protocol):
    #: Django's vendor name: "sqlite" or "postgresql".
    NAME: str
    #: The placeholder of a JSON value (PostgreSQL casts the text to ``jsonb``).
    JSON_PARAM: str
    #: A unit of work's row by id, locked until the database transaction ends (PostgreSQL:
    #: ``FOR UPDATE``; SQLite: the write lock ``BEGIN IMMEDIATE`` holds already).
    TRANSACTION_ROW_LOCKED: str
    #: What a read ends with to lock the rows it reads until the database transaction ends
    #: (PostgreSQL ``FOR UPDATE``; SQLite nothing: the write lock holds them), and the same
    #: for the rows of one table of a join (``{alias}``: that table's alias).
    ROW_LOCK: str
    ROW_LOCK_OF: str
    #: Whether linking and resolving take the link-graph lock (``transactions.locks``):
    #: PostgreSQL, whose writers run at once; not SQLite, whose writers are serialised.
    LINK_GRAPH_LOCKED: bool

    def graph_lock_shared_and_links(self, *, transaction_id: str) -> tuple[bool, object]:
        """The start of a commit or rollback (``transactions.manager._under_graph_lock``):
        the link-graph lock taken shared where there is one, whether the unit of work has a
        link (it then takes the lock exclusively instead; always False where there is no
        lock), and its row, locked (None if there is none)."""

    def engine_error(self, exc: BaseException) -> tuple[str, str, str] | None:
        """What an error raised by one of the database's own engine functions means (its
        kind, detail and message; ``transactions.manager._engine_error`` maps it), or None
        for any other error (always, where there are no such functions)."""

    def link_graph_lock(self, *, exclusive: bool) -> None:
        """Take the link-graph lock until the database transaction ends (nothing where
        ``LINK_GRAPH_LOCKED`` is false)."""

    def dt_param(self, value):
        """A datetime as the database takes it as a parameter (None stays None)."""

    def transactions_mark(self, *, transaction_ids: Sequence[str], mark: str) -> None:
        """Add ``mark`` to the marks of the units of work (sorted ids, at least one) that lack
        it, in one deferred statement."""

    def journal_insert(self, *, events: list) -> None:
        """Append journal events (at least one) in one deferred statement (a few for
        thousands, on SQLite)."""

    def commit_call(self, *, transaction_id: str, now) -> tuple[str, list] | None:
        """A unit of work's whole commit as one call of the database's own function: its
        statement and arguments, which ``transactions.manager`` sends as an engine step of
        its own (rows ``(outcome, keys, *row)``: ``done``, committed now; ``resolved``,
        committed before; ``managers``, nothing changed, the transaction manager's
        statements and its resource managers do it: a unit of work with marks or links).
        None on SQLite, which has no server-side functions: the manager's statements always.
        Errors: ``transactions.manager._engine_error``."""

    def rollback_call(self, *, transaction_id: str, reason: str, now, require_open: bool) -> tuple[str, list] | None:
        """As ``commit_call``, for a rollback (PostgreSQL: ``managers`` also when a get came
        from a queue with a backout threshold; ``resolved``: rolled back or committed before)."""


_chosen: list = []


def dialect() -> Dialect:
    """The default database's dialect module, chosen at the first call (a process's default
    database never changes vendor)."""
    try:
        return _chosen[0]
    except IndexError:
        from ..seam import default_db

        if default_db().vendor == "postgresql":
            from . import postgresql as chosen
        else:
            from . import sqlite as chosen
        _chosen.append(chosen)
        return chosen

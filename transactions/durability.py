"""Durable and relaxed database transactions.

A reply that says committed means on disk (docs/performance.md). The connection's default
is durable: SQLite ``synchronous=FULL`` in WAL mode (the WAL is synced at every commit),
PostgreSQL ``synchronous_commit=on``. A database transaction whose commit promises nothing
to anyone (a begin, an uncommitted put, a get under a unit of work, a rollback) may skip
the sync: ``engine_step(durable=False)``. Skipping is safe because the log is sequential:
the next durable commit's sync puts everything written before it on disk too, and what a
power failure could lose meanwhile is only work that restart recovery rolls back anyway.

SQLite decides at ``COMMIT`` by the connection's ``synchronous`` level, which can only be
changed outside a transaction: a relaxed step lowers it before ``BEGIN`` and restores it
after ``COMMIT`` (two ``PRAGMA`` calls of a microsecond each), so every other write,
ORM code included, stays durable. PostgreSQL takes ``SET LOCAL synchronous_commit``
inside the transaction. A step nested in a caller's atomic block leaves the level to the
outermost transaction (durable unless it said otherwise).
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from django.conf import settings
from django.db import connection
from django.db import transaction as db

from . import queries


@contextmanager
def engine_step(*, durable: bool) -> Iterator[None]:
    """One database transaction of the engine; ``durable`` says whether its commit must be
    on disk before the caller answers."""
    outermost = not connection.in_atomic_block
    if connection.vendor == "sqlite":
        relax = outermost and not durable and not settings.BATON_SKIP_COMMIT_SYNC
        if relax:
            connection.ensure_connection()
            connection.connection.execute("PRAGMA synchronous=NORMAL")
        try:
            with db.atomic():
                yield
        finally:
            if relax and connection.connection is not None:
                connection.connection.execute("PRAGMA synchronous=FULL")
        return
    with db.atomic():
        queries.deferred_begin()
        if outermost and not durable and connection.vendor == "postgresql":
            queries.deferred("SET LOCAL synchronous_commit TO OFF")  # sent with the first statement
        try:
            yield
        except BaseException:
            queries.deferred_end(keep=False)
            raise
        queries.deferred_end(keep=True)

"""Beginning a unit of work on a broker for a client: the broker's definition from the
definitions cache, checked in the same database transaction that writes the unit of work."""

from __future__ import annotations

from django.db import DatabaseError, connection

from transactions.manager import transaction_begin
from transactions.models import Transaction

from .. import queries
from ..dialects import postgresql as pg
from ..definitions import broker_cached, definitions_checked, definitions_trusted
from ..exceptions import BrokerNotFound


class _DefinitionsChanged(Exception):
    """The definitions changed since the cache trusted by a begin was filled: nothing was
    written, and the begin runs again, reading the definitions first."""


def unit_of_work_begin(*, broker: str, timeout_ms: int | None, user_id: int | None) -> Transaction:
    """Begin a unit of work on ``broker`` belonging to ``user_id``, rolled back if still open
    after ``timeout_ms`` (None: the broker's transaction timeout).

    The broker's definition comes from the cache the last operation checked; the check that
    it is still current is made inside the database transaction that writes the unit of
    work, before it writes: on SQLite a read of the definitions version there, on
    PostgreSQL a guard sent with the writes (``brokers.dialects.postgresql.definitions_guard``), so the begin is
    one round trip. A changed definition undoes that transaction and the begin runs again
    the careful way (the version read first), which also says when the broker is gone."""
    # inside a caller's database transaction the begin writes in it (transaction_begin): a
    # refused guard would leave it aborted, so there the version is read first
    trusted = None if connection.in_atomic_block else definitions_trusted()
    if trusted is not None:
        try:
            owner = broker_cached(name=broker)
        except BrokerNotFound:
            owner = None  # perhaps only the cache says so: the careful way decides
        if owner is not None:
            try:
                return transaction_begin(
                    broker=owner.name,
                    timeout_ms=owner.transaction_timeout_ms if timeout_ms is None else timeout_ms,
                    user_id=user_id,
                    first=lambda: _trust_checked(trusted),
                )
            except _DefinitionsChanged:
                pass
            except DatabaseError as exc:
                if not pg.guard_refused(exc):
                    raise
    definitions_checked()
    owner = broker_cached(name=broker)
    return transaction_begin(
        broker=owner.name,
        timeout_ms=owner.transaction_timeout_ms if timeout_ms is None else timeout_ms,
        user_id=user_id,
    )


def _trust_checked(version: int) -> None:
    """Inside the step, before it writes: the definitions are still ``version``."""
    if queries.postgres():
        pg.definitions_guard(version=version)  # travels with the writes
    elif queries.definitions_version() != version:
        raise _DefinitionsChanged

"""Beginning a unit of work on a broker for a client: the broker's definition from the
definitions cache, checked in the same database transaction that writes the unit of work."""

from __future__ import annotations

from functools import partial

from transactions.exceptions import DefinitionsChanged
from transactions.manager import engine_called, transaction_begin
from transactions.models import Transaction
from transactions.seam import default_db

from ..definitions import broker_cached, definitions_checked, definitions_trusted
from ..dialects import dialect
from ..exceptions import BrokerNotFound


def unit_of_work_begin(*, broker: str, timeout_ms: int | None, user_id: int | None) -> Transaction:
    """Begin a unit of work on ``broker`` belonging to ``user_id``, rolled back if still open
    after ``timeout_ms`` (None: the broker's transaction timeout).

    One path: the broker's definition comes from the definitions cache, trusted, and the
    check that the cache is still current travels with the unit of work's writes in their
    database transaction (``dialect().definitions_check``: on PostgreSQL one call of
    ``baton_definitions_check_v1`` sent with them, so the begin is one round trip; on SQLite
    a read of the version there). A stale cache undoes that transaction; the cache is read
    again and the begin runs again. Inside a caller's database transaction the version is
    read first (a refusal there would abort the caller's transaction), so its check passes."""
    while True:
        if default_db().in_atomic_block or definitions_trusted() is None:
            definitions_checked()
        version = definitions_trusted()
        try:
            owner = broker_cached(name=broker)
        except BrokerNotFound:
            if definitions_checked():
                raise
            continue  # said on the strength of a stale cache: again
        begin = partial(
            transaction_begin,
            broker=owner.name,
            timeout_ms=owner.transaction_timeout_ms if timeout_ms is None else timeout_ms,
            user_id=user_id,
            first=partial(dialect().definitions_check, version=version),
        )
        try:
            return engine_called(None, begin)
        except DefinitionsChanged:
            definitions_checked()  # the cache read again: the begin again

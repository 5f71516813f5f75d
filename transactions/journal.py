"""Writing the journal. Callers pass events made with :func:`journal_event`; they are
inserted with one ``executemany`` inside the caller's database transaction, so an event is
recorded exactly when what it describes commits.

The journal is written on every put, get, commit and rollback, so events are plain tuples
(not model instances) and the statement lives in :mod:`transactions.queries`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Iterable, NamedTuple

from django.utils import timezone

from . import queries


class Event(NamedTuple):
    """One journal row to be written (see ``JournalEvent`` for the columns)."""

    at: datetime
    kind: str
    broker: str
    queue: str
    transaction_id: str
    msg_id: str
    detail: dict


def journal_event(
    kind: str,
    *,
    broker: str,
    queue: str = "",
    transaction_id: str | None = "",
    msg_id: str = "",
    at: datetime | None = None,
    **detail: Any,
) -> Event:
    return Event(at or timezone.now(), kind, broker, queue, transaction_id or "", msg_id or "", detail)


def journal_record(*, events: Iterable[Event]) -> None:
    queries.journal_insert(events=list(events))

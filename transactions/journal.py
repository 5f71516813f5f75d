"""Writing the journal. Callers pass events made with :func:`journal_event`; they are
inserted with one ``executemany`` inside the caller's database transaction, so an event is
recorded exactly when what it describes commits.

The journal is written on every put, get, commit and rollback, so events are plain tuples
(not model instances) and the statement lives in :mod:`transactions.queries`.

A step's put, get or lock of several messages is one event (:func:`journal_step_event`),
not one per message: a row costs a step about as much as a message's own insert did
(docs/performance.md). :func:`journal_messages` gives such an event back as one per
message, for the readers that count or follow messages (the analytics export).
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
    count: int = 1


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


def journal_step_event(
    kind: str,
    *,
    broker: str,
    queue: str,
    transaction_id: str | None,
    at: datetime,
    messages: list[dict],
) -> Event:
    """One event for what a step did to ``messages`` (each a dict with its ``msg_id`` and
    that message's details): for one message the same row as :func:`journal_event` writes;
    for several, ``msg_id`` empty, ``count`` their number and ``detail["messages"]`` the
    dicts, in order."""
    if len(messages) == 1:
        detail = dict(messages[0])
        return Event(at, kind, broker, queue, transaction_id or "", detail.pop("msg_id"), detail)
    return Event(at, kind, broker, queue, transaction_id or "", "", {"messages": messages}, len(messages))


def journal_messages(event: dict) -> list[dict]:
    """``event`` (a journal row as a dict of its columns) as one event per message it
    stands for, each with that message's ``msg_id`` and ``detail``; the event itself when
    it stands for one message or none. The events keep the row's id."""
    messages = (event.get("detail") or {}).get("messages")
    if event.get("msg_id") or not isinstance(messages, list):
        return [event]
    out = []
    for message in messages:
        detail = dict(message)
        out.append({**event, "msg_id": detail.pop("msg_id", ""), "detail": detail})
    return out


def journal_record(*, events: Iterable[Event]) -> None:
    queries.journal_insert(events=list(events))

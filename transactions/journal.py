"""Writing the journal. Callers pass events made with :func:`journal_event`; they are
inserted in one statement inside the caller's database transaction."""
from __future__ import annotations

from datetime import datetime
from typing import Any, Iterable

from django.utils import timezone

from .models import JournalEvent


def journal_event(
    kind: str, *, broker: str, queue: str = "", transaction_id: str | None = "", msg_id: str = "",
    at: datetime | None = None, **detail: Any,
) -> JournalEvent:
    return JournalEvent(
        at=at or timezone.now(), kind=kind, broker=broker, queue=queue,
        transaction_id=transaction_id or "", msg_id=msg_id, detail=detail,
    )


def journal_record(*, events: Iterable[JournalEvent]) -> None:
    events = list(events)
    if events:
        JournalEvent.objects.bulk_create(events)

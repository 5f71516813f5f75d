"""Writing the journal. Callers pass events made with :func:`journal_event`; they are
inserted with one ``executemany`` inside the caller's database transaction.

The journal is written on every put, get, commit and rollback, so it bypasses the ORM's
``bulk_create`` (which costs several times the database's own time in Python).
"""
from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Iterable

from django.core.serializers.json import DjangoJSONEncoder
from django.db import connection
from django.utils import timezone

from .models import JournalEvent

_COLUMNS = ("at", "kind", "broker", "queue", "transaction_id", "msg_id", "detail")


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
    if not events:
        return
    ops = connection.ops
    detail = "%s::jsonb" if connection.vendor == "postgresql" else "%s"
    sql = (f"INSERT INTO {JournalEvent._meta.db_table} ({', '.join(_COLUMNS)}) "
           f"VALUES (%s, %s, %s, %s, %s, %s, {detail})")
    rows = [
        (ops.adapt_datetimefield_value(e.at), e.kind, e.broker, e.queue, e.transaction_id, e.msg_id,
         json.dumps(e.detail, cls=DjangoJSONEncoder))
        for e in events
    ]
    with connection.cursor() as cursor:
        cursor.executemany(sql, rows)

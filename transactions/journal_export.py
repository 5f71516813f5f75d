"""Exporting the journal to the staging area, where the Spark jobs read it
(``spark_jobs.journal_analytics``); they never touch the database.

The file is JSON Lines, one event a line in id order::

    {"id": 7, "at": "2025-05-01T12:00:00.250000+00:00", "kind": "get", "broker": "QM1",
     "queue": "Q1", "transaction_id": "", "msg_id": "41...", "detail": {"put_time": "..."}}

``at`` is ISO-8601 in UTC with microseconds; empty strings stay empty strings (as in the
table); ``detail`` is the event's JSON object as recorded.

The file appears whole or not at all: it is written under a temporary name beginning with
a dot in the same directory (Spark and Hadoop skip such files when reading a directory)
and renamed over ``path`` at the end. Events are read in chunks of ``chunk_size`` by id
(keyset pagination: each chunk is one short query, so the export holds no long read
transaction or server-side cursor and never loads the whole journal).

Incremental exports pass the previous ``last_id`` as ``after_id``. On PostgreSQL ids come
from a sequence, which is not commit-ordered: an event whose database transaction commits
after a later id was exported is skipped by the next increment. Analytics over whole
exports, or increments that lag the live journal, are not affected.
"""
from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

from .models import JournalEvent

FIELDS = ("id", "at", "kind", "broker", "queue", "transaction_id", "msg_id", "detail")
CHUNK_SIZE = 2000


def journal_export(*, path: str | os.PathLike, after_id: int = 0, limit: int | None = None,
                   chunk_size: int = CHUNK_SIZE) -> dict:
    """Write the journal events with ``id > after_id`` (at most ``limit`` of them, oldest
    first) to ``path`` as JSON Lines, replacing the file atomically. Returns ``{"path",
    "events", "last_id"}``; ``last_id`` is the last id written, or ``after_id`` if none was
    (pass it as the next export's ``after_id``)."""
    if after_id < 0:
        raise ValueError("after_id must be 0 or more.")
    if limit is not None and limit < 0:
        raise ValueError("limit must be 0 or more.")
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")
    events, last_id = 0, after_id
    try:
        with open(temporary, "x", encoding="utf-8") as out:
            for event in _events_after(after_id=after_id, limit=limit, chunk_size=chunk_size):
                out.write(json.dumps(_exported(event), ensure_ascii=False, separators=(",", ":")))
                out.write("\n")
                events, last_id = events + 1, event["id"]
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return {"path": str(target), "events": events, "last_id": last_id}


def _events_after(*, after_id: int, limit: int | None, chunk_size: int):
    """Events with ``id > after_id`` in id order, fetched ``chunk_size`` at a time."""
    remaining = limit
    while remaining is None or remaining > 0:
        size = chunk_size if remaining is None else min(chunk_size, remaining)
        chunk = list(JournalEvent.objects.filter(id__gt=after_id).order_by("id").values(*FIELDS)[:size])
        yield from chunk
        if len(chunk) < size:
            return
        after_id = chunk[-1]["id"]
        if remaining is not None:
            remaining -= len(chunk)


def _exported(event: dict) -> dict:
    # Not DjangoJSONEncoder: it cuts datetimes to milliseconds, and dwell times are
    # differences of these stamps.
    return {**event, "at": event["at"].isoformat(), "detail": event["detail"] or {}}

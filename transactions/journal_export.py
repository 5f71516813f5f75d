"""Exporting the journal to the staging area, where the Spark jobs read it
(``spark_jobs.journal_analytics``); they never touch the database.

The file is JSON Lines, one event a line in id order, a step's put, get or lock of several
messages (one journal row, ``transactions.journal.journal_messages``) as one line per
message, each with the row's id::

    {"id": 7, "at": "2025-05-01T12:00:00.250000+00:00", "kind": "get", "broker": "QM1",
     "queue": "Q1", "transaction_id": "", "msg_id": "41...", "detail": {"put_time": "..."}}

``at`` is ISO-8601 in UTC with microseconds; empty strings stay empty strings (as in the
table); ``detail`` is the event's JSON object as recorded.

The file appears whole or not at all: it is written under a temporary name beginning with
a dot in the same directory (Spark and Hadoop skip such files when reading a directory)
and renamed over ``path`` at the end. Events are read in chunks of ``chunk_size`` by id
(keyset pagination: each chunk is one short query, so the export holds no long read
transaction or server-side cursor and never loads the whole journal).

``journal_export`` by ``after_id`` is for SQLite and whole exports: on PostgreSQL ids come
from a sequence, which is not commit-ordered, so an event whose database transaction
commits after a later id was exported would be skipped by the next increment.

Incremental exports that never miss an event use :func:`journal_export_increment` and a
**watermark** (docs/spark.md, "The journal watermark"):

- SQLite has one writer at a time, and a row's id is drawn under the write lock, so ids
  are in commit order: the watermark is the last id exported.
- PostgreSQL: the watermark is the snapshot's ``xmin`` (``pg_snapshot_xmin``), the oldest
  transaction still in progress. Every transaction older than it has ended, so its rows
  are final (committed and visible, or never). An increment exports the visible rows whose
  inserting transaction (the row's ``xmin``) is older than the current ``xmin`` and not
  older than the previous watermark: each event exactly once, however late its writer
  commits. Rows of a writer still in progress wait for the next increment.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

from django.db import connection

from .journal import journal_messages
from .models import JournalEvent

FIELDS = ("id", "at", "kind", "broker", "queue", "transaction_id", "msg_id", "detail")
CHUNK_SIZE = 2000


def journal_export(
    *, path: str | os.PathLike, after_id: int = 0, limit: int | None = None, chunk_size: int = CHUNK_SIZE
) -> dict:
    """Write the journal events with ``id > after_id`` (at most ``limit`` journal rows,
    oldest first) to ``path`` as JSON Lines, replacing the file atomically. Returns
    ``{"path", "events", "last_id"}``: ``events`` the lines written (a row of several
    messages is one line per message); ``last_id`` the last id written, or ``after_id`` if
    none was (pass it as the next export's ``after_id``)."""
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
            for row in _events_after(after_id=after_id, limit=limit, chunk_size=chunk_size):
                for event in journal_messages(row):
                    out.write(json.dumps(_exported(event), ensure_ascii=False, separators=(",", ":")))
                    out.write("\n")
                    events += 1
                last_id = row["id"]
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


# --- incremental export with a watermark -----------------------------------------------------


def journal_export_increment(*, path: str | os.PathLike, watermark: dict | None, chunk_size: int = CHUNK_SIZE) -> dict:
    """Write the journal events after ``watermark`` (None: from the start) that are final
    now to ``path`` (JSON Lines, atomically). Returns ``{"path", "events", "last_id",
    "watermark"}``; pass ``watermark`` to the next increment. See the module's docstring."""
    if connection.vendor != "postgresql":
        after_id = int((watermark or {}).get("last_id", 0))
        summary = journal_export(path=path, after_id=after_id, chunk_size=chunk_size)
        return {**summary, "watermark": {"last_id": summary["last_id"]}}
    horizon = _snapshot_xmin()
    previous = (watermark or {}).get("xmin")
    rows = _final_events(newer_than=previous, older_than=horizon, chunk_size=chunk_size)
    summary = _written(path, rows)
    return {**summary, "watermark": {"xmin": horizon, "last_id": summary["last_id"]}}


def _snapshot_xmin() -> str:
    """The oldest transaction id still in progress (as a 64-bit ``xid8``, in text). Takes
    no lock; reads the current snapshot."""
    with connection.cursor() as c:
        c.execute("SELECT pg_snapshot_xmin(pg_current_snapshot())::text")
        return c.fetchone()[0]


#: The journal row's inserting transaction (its ``xmin`` system column, 32 bits) compared
#: with watermarks by ``age()``: how many transactions ago it began, which stays right across
#: 32-bit wraparound. A watermark (``xid8``) is taken to 32 bits first. Rows frozen by
#: VACUUM read as age 2^31-1: older than any watermark (they were exported long before).
_XID32 = "(%s::numeric %% 4294967296)::text::xid"


def _final_events(*, newer_than: str | None, older_than: str, chunk_size: int):
    """Visible events whose inserting transaction began before ``older_than`` and not
    before ``newer_than``, in id order, ``chunk_size`` at a time (keyset pagination; no
    lock). A sequential scan of the journal: a late writer's rows can have any id."""
    table = JournalEvent._meta.db_table
    after_id = 0
    window = f"age(xmin) > age({_XID32})"
    params_window: list = [older_than]
    if newer_than is not None:
        window += f" AND age(xmin) <= age({_XID32})"
        params_window.append(newer_than)
    columns = ", ".join(FIELDS)
    while True:
        with connection.cursor() as c:
            c.execute(
                f"SELECT {columns} FROM {table} WHERE id > %s AND {window} ORDER BY id LIMIT %s",
                [after_id, *params_window, chunk_size],
            )
            chunk = [dict(zip(FIELDS, row)) for row in c.fetchall()]
        for event in chunk:
            if isinstance(event["detail"], str):
                event["detail"] = json.loads(event["detail"])
        yield from chunk
        if len(chunk) < chunk_size:
            return
        after_id = chunk[-1]["id"]


def _written(path: str | os.PathLike, events) -> dict:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.{uuid.uuid4().hex}.tmp")
    count, last_id = 0, 0
    try:
        with open(temporary, "x", encoding="utf-8") as out:
            for row in events:
                for event in journal_messages(row):
                    out.write(json.dumps(_exported(event), ensure_ascii=False, separators=(",", ":")))
                    out.write("\n")
                    count += 1
                last_id = max(last_id, row["id"])
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return {"path": str(target), "events": count, "last_id": last_id}

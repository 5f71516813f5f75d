"""Bounded storage (docs/operating.md, "Storage").

Housekeeping removes, in batches of ``BATCH`` rows, each batch its own short database
transaction (so no batch holds SQLite's write lock or PostgreSQL's row locks for long):

- units of work resolved more than ``BATON_RESOLVED_RETENTION_S`` ago (found from the oldest
  end of the ``txn_resolved`` index); their links and pending reactions go with them, and
  messages, connections and causes that named them are cleared. Their display and ``check``
  then answer 404, as for an unknown id (one statement per referring table and batch:
  ``_units_of_work_deleted``);
- journal events older than ``BATON_JOURNAL_RETENTION_S`` once the analytics export has read
  them (SQLite: ids up to the export's ``last_id``; PostgreSQL: rows whose inserting
  transaction is older than the export's ``xmin``, as ``transactions.journal_export`` counts
  them), and every event older than twice the window whether read or not; never an event
  not yet folded into the metrics' totals (``traffic``), never the newest row (journal ids
  are export watermarks).

Duplicate-detection keys past their queue's ``dedup_retention_ms`` are forgotten by the
per-second housekeeping (``brokers.services.housekeeping.dedup_keys_sweep``).

Then, on SQLite, the pages freed are given back (``PRAGMA incremental_vacuum``, the database
being ``auto_vacuum=INCREMENTAL``: migration brokers 0016) when more than ``SPARE_PAGES``
are free, ``VACUUM_STEP`` pages a transaction; up to ``SPARE_PAGES`` stay free for the next
rows. ``longest_hold_ms`` reports the longest of these database transactions.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import connection, transaction as db
from django.db.models import CASCADE, SET_NULL
from django.utils import timezone

from analytics.models import ExportWatermark
from transactions.journal_export import _XID32
from transactions.models import JournalEvent, Transaction, TransactionState
from transactions.selectors import journal_first_id_since

from .traffic import traffic_folded_id

BATCH = 500
SPARE_PAGES = 1024
VACUUM_STEP = 1000
RESOLVED = (TransactionState.COMMITTED, TransactionState.ROLLED_BACK)


@dataclass
class Held:
    """The longest database transaction of a pass, in milliseconds."""

    longest_ms: float = 0.0

    def timed(self, work):
        started = time.perf_counter()
        with db.atomic():
            result = work()
        self.longest_ms = max(self.longest_ms, (time.perf_counter() - started) * 1000)
        return result


def units_of_work_forget(*, held: Held, now=None) -> int:
    """Delete the units of work resolved before the window, ``BATCH`` a transaction."""
    cutoff = (now or timezone.now()) - timedelta(seconds=settings.BATON_RESOLVED_RETENTION_S)
    removed = 0

    def batch() -> int:
        ids = list(
            Transaction.objects.filter(resolved_at__lt=cutoff, state__in=RESOLVED)
            .order_by("resolved_at")
            .values_list("pk", flat=True)[:BATCH]
        )
        if ids:
            _units_of_work_deleted(ids)
        return len(ids)

    while (n := held.timed(batch)) > 0:
        removed += n
    return removed


def _units_of_work_deleted(ids: list[str]) -> None:
    """Delete the units of work ``ids`` in one statement per table that refers to them, as
    each foreign key says (CASCADE: its rows go; SET_NULL: the reference is cleared), each
    through the referring column's index; Django's deletion collector would first read every
    referring row."""
    marks = ", ".join(["%s"] * len(ids))
    with connection.cursor() as c:
        for relation in Transaction._meta.get_fields(include_hidden=True):
            if not (relation.auto_created and relation.is_relation and not relation.concrete):
                continue  # only the references to units of work (related_name="+" ones too)
            table, column = relation.related_model._meta.db_table, relation.field.column
            if relation.on_delete is CASCADE:
                c.execute(f"DELETE FROM {table} WHERE {column} IN ({marks})", ids)
            elif relation.on_delete is SET_NULL:
                c.execute(f"UPDATE {table} SET {column} = NULL WHERE {column} IN ({marks})", ids)
            else:  # a new kind of reference must be decided here before units of work go
                raise NotImplementedError(f"{table}.{column}: on_delete {relation.on_delete.__name__}")
        c.execute(f"DELETE FROM {Transaction._meta.db_table} WHERE id IN ({marks})", ids)


def _exported_upto() -> tuple[int, str | None]:
    """The export's watermark: (SQLite) the last id it read; (PostgreSQL) its ``xmin``."""
    watermark = ExportWatermark.objects.filter(pk=1).values_list("watermark", flat=True).first() or {}
    return int(watermark.get("last_id") or 0), watermark.get("xmin")


def journal_forget(*, held: Held, now=None) -> int:
    """Delete the journal events past retention (see the module's docstring)."""
    now = now or timezone.now()
    window = timedelta(seconds=settings.BATON_JOURNAL_RETENTION_S)
    newest = JournalEvent.objects.order_by("-id").values_list("id", flat=True).first()
    if newest is None:
        return 0
    # ids below these are older than the window, and than twice it (journal_first_id_since
    # leaves JOURNAL_AT_SLACK in: the bounds err towards keeping)
    below_window = journal_first_id_since(since=now - window) or 0
    below_twice = journal_first_id_since(since=now - 2 * window) or 0
    # never the newest row, never an event not yet in the metrics' totals
    upper = min(below_window, newest, traffic_folded_id() + 1)
    last_id, xmin = _exported_upto()
    if connection.vendor == "sqlite":  # ids in commit order: read means id <= last_id
        return _journal_delete_below(min(upper, max(below_twice, last_id + 1)), held=held)
    removed = _journal_delete_below(min(upper, below_twice), held=held)
    if xmin is not None:
        removed += _journal_delete_read(start=min(upper, below_twice), upper=upper, xmin=xmin, held=held)
    return removed


def _journal_delete_below(upper: int, *, held: Held) -> int:
    table = JournalEvent._meta.db_table
    removed = 0

    def batch() -> int:
        with connection.cursor() as c:
            c.execute(
                f"DELETE FROM {table} WHERE id IN (SELECT id FROM {table} WHERE id < %s ORDER BY id LIMIT %s)",
                [upper, BATCH],
            )
            return c.rowcount

    while (n := held.timed(batch)) > 0:
        removed += n
    return removed


def _journal_delete_read(*, start: int, upper: int, xmin: str, held: Held) -> int:
    """PostgreSQL: delete the events with ids in [start, upper) the export has read."""
    table = JournalEvent._meta.db_table
    removed, after = 0, start - 1
    while after < upper - 1:

        def batch(after: int = after) -> tuple[int, int | None]:
            with connection.cursor() as c:
                c.execute(
                    f"SELECT id FROM {table} WHERE id > %s AND id < %s ORDER BY id LIMIT %s", [after, upper, BATCH]
                )
                ids = [row[0] for row in c.fetchall()]
                if not ids:
                    return 0, None
                c.execute(f"DELETE FROM {table} WHERE id = ANY(%s) AND age(xmin) > age({_XID32})", [ids, xmin])
                return c.rowcount, ids[-1]

        n, last = held.timed(batch)
        if last is None:
            break
        removed, after = removed + n, last
    return removed


def space_given_back(*, held: Held) -> int:
    """SQLite: give the free pages beyond ``SPARE_PAGES`` back to the file system; returns
    how many pages were given back."""
    if connection.vendor != "sqlite":
        return 0
    given = 0
    while True:
        with connection.cursor() as c:
            c.execute("PRAGMA freelist_count")
            spare = c.fetchone()[0] - SPARE_PAGES
        if spare <= 0:
            return given
        step = min(spare, VACUUM_STEP)

        def vacuum(step: int = step) -> None:
            with connection.cursor() as c:
                c.execute(f"PRAGMA incremental_vacuum({int(step)})")
                c.fetchall()  # each page freed is a step of the statement

        held.timed(vacuum)
        given += step


def retention_apply(*, now=None) -> dict[str, float]:
    """One retention pass; what it removed and the longest database transaction it held."""
    held = Held()
    done = {
        "units_of_work_forgotten": units_of_work_forget(held=held, now=now),
        "journal_events_forgotten": journal_forget(held=held, now=now),
    }
    done["pages_given_back"] = space_given_back(held=held)
    done["longest_hold_ms"] = round(held.longest_ms, 1)
    return done

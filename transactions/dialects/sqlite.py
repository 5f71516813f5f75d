"""SQLite's transaction, link and journal statements (``transactions.dialects``). Every
writer holds the database's write lock from ``BEGIN IMMEDIATE`` (transactions/durability.py),
so no statement here takes a row lock: "Locks" below name none but that one."""

from __future__ import annotations

from datetime import timezone as dt_timezone
from typing import Sequence

from ..queries import _JOURNAL_COLUMNS, _TXN_COLUMN_LIST, JOURNAL, TRANSACTION, json_text, transaction_from_row
from ..seam import cursor, deferred

NAME = "sqlite"

JSON_PARAM = "%s"

#: Nothing: the write lock holds every row.
ROW_LOCK = ""
ROW_LOCK_OF = ""

#: Writers are serialised by the write lock: no link-graph lock.
LINK_GRAPH_LOCKED = False


def link_graph_lock(*, exclusive: bool) -> None:
    """Nothing: the write lock serialises linking and resolving already."""


#: Locks: none (the write lock is held).
TRANSACTION_ROW_LOCKED = f"SELECT {_TXN_COLUMN_LIST} FROM {TRANSACTION} WHERE id = %s"


def graph_lock_shared_and_links(*, transaction_id: str):
    """No link-graph lock (writers are serialised) and so no need to know of links: False,
    and the unit of work's row (None if there is none)."""
    with cursor() as c:
        c.execute(TRANSACTION_ROW_LOCKED, [transaction_id])
        row = c.fetchone()
    return False, None if row is None else transaction_from_row(row)


def engine_error(exc: BaseException) -> None:
    """No engine functions on SQLite: no error of theirs to map."""


#: Adds a mark to the units of work of the IN list that lack it. Locks: none (the write lock).
#: The IN list's placeholders fill ``{ids}``.
TRANSACTIONS_MARK = (
    f"UPDATE {TRANSACTION} SET marks = json_insert(marks, '$[#]', %s) WHERE id IN ({{ids}})"
    " AND NOT EXISTS (SELECT 1 FROM json_each(marks) WHERE value = %s)"
)

#: The journal's INSERT; the VALUES rows (8 placeholders each) fill ``{rows}``. New rows.
JOURNAL_VALUES = f"INSERT INTO {JOURNAL} ({', '.join(_JOURNAL_COLUMNS)}) VALUES {{rows}}"

#: Rows per journal INSERT (8 parameters each: well inside SQLite's 32,766).
JOURNAL_CHUNK = 1000


def dt_param(value):
    """Naive UTC text, as Django writes a datetime on SQLite."""
    if value is None:
        return value
    if value.tzinfo is dt_timezone.utc:  # timezone.now()'s: its text less "+00:00" (replace() cost 2 µs)
        return value.isoformat(" ")[:-6]
    if value.tzinfo is not None:
        value = value.astimezone(dt_timezone.utc).replace(tzinfo=None)
    return value.isoformat(" ")


def transactions_mark(*, transaction_ids: Sequence[str], mark: str) -> None:
    deferred(
        TRANSACTIONS_MARK.format(ids=", ".join(["%s"] * len(transaction_ids))),
        [mark, *transaction_ids, mark],
    )


_journal_values: dict[int, str] = {}


def _journal_values_sql(rows: int) -> str:
    """``JOURNAL_VALUES`` with ``rows`` rows, made once per size."""
    sql = _journal_values.get(rows)
    if sql is None:
        sql = JOURNAL_VALUES.format(rows=", ".join(["(%s, %s, %s, %s, %s, %s, %s, %s)"] * rows))
        if len(_journal_values) < 1024:
            _journal_values[rows] = sql
    return sql


def journal_insert(*, events: list) -> None:
    last_at, last_value = None, None
    for start in range(0, len(events), JOURNAL_CHUNK):
        chunk = events[start : start + JOURNAL_CHUNK]
        params: list = []
        for e in chunk:
            if e.at is not last_at:  # events of one operation share their time
                last_at, last_value = e.at, dt_param(e.at)
            params += (
                last_value,
                e.kind,
                e.broker,
                e.queue,
                e.transaction_id,
                e.msg_id,
                json_text(e.detail) if e.detail else "{}",
                e.count,
            )
        deferred(_journal_values_sql(len(chunk)), params)


def commit_call(*, transaction_id: str, now) -> None:
    """SQLite has no server-side functions: every commit is the transaction manager's
    sequence of named statements, its resource managers acting in it."""
    return None


def rollback_call(*, transaction_id: str, reason: str, now, require_open: bool) -> None:
    """As ``commit_call``: every rollback is the manager's sequence of named statements."""
    return None

"""PostgreSQL's transaction, link and journal statements (``transactions.dialects``), with
the row locks each takes. Lock order (docs/concurrency.md): link-graph lock → transaction
rows → queue rows → message rows."""

from __future__ import annotations

from typing import Sequence

from ..queries import _JOURNAL_COLUMNS, _TXN_COLUMN_LIST, JOURNAL, TRANSACTION, json_text, pg_array
from ..seam import deferred

NAME = "postgresql"

JSON_PARAM = "%s::jsonb"

#: Locks: the unit of work's row, ``FOR UPDATE``, until the database transaction ends.
TRANSACTION_ROW_LOCKED = f"SELECT {_TXN_COLUMN_LIST} FROM {TRANSACTION} WHERE id = %s FOR UPDATE"

#: Adds a mark to the units of work of the array that lack it. Locks: the rows it changes,
#: ``FOR UPDATE`` in the order of their ids; a row that has the mark already is neither
#: locked nor written.
TRANSACTIONS_MARK = (
    f"UPDATE {TRANSACTION} SET marks = marks || jsonb_build_array(%s::text) WHERE id IN"
    f" (SELECT id FROM {TRANSACTION} WHERE id = ANY(%s::text[])"
    " AND NOT marks @> jsonb_build_array(%s::text) ORDER BY id FOR UPDATE)"
)

#: The journal's INSERT of one array per column: the same short text whatever the number of
#: events (the driver parses a statement's placeholders on the client, and caches that only
#: for short statements with few parameters: a VALUES list of 100 rows cost it about 8 ms a
#: call). New rows.
JOURNAL_ARRAYS = (
    f"INSERT INTO {JOURNAL} ({', '.join(_JOURNAL_COLUMNS)}) SELECT * FROM unnest("
    "%s::timestamptz[], %s::text[], %s::text[], %s::text[], %s::text[], %s::text[], %s::jsonb[], %s::int[])"
)


def dt_param(value):
    """The aware datetime itself (the driver adapts it)."""
    return value


def transactions_mark(*, transaction_ids: Sequence[str], mark: str) -> None:
    deferred(TRANSACTIONS_MARK, [mark, list(transaction_ids), mark])


def journal_insert(*, events: list) -> None:
    columns: list[list] = [[], [], [], [], [], [], [], []]
    for e in events:
        for column, value in zip(
            columns,
            (
                e.at,
                e.kind,
                e.broker,
                e.queue,
                e.transaction_id,
                e.msg_id,
                json_text(e.detail) if e.detail else "{}",
                e.count,
            ),
        ):
            column.append(value)
    deferred(JOURNAL_ARRAYS, [pg_array(column) for column in columns])

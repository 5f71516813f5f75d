"""PostgreSQL's transaction, link and journal statements (``transactions.dialects``), with
the row locks each takes. Lock order (docs/concurrency.md): link-graph lock → transaction
rows → queue rows → message rows."""

from __future__ import annotations

from typing import Sequence

from ..models import Transaction
from ..queries import (
    _JOURNAL_COLUMNS,
    _TXN_COLUMN_LIST,
    JOURNAL,
    LINK,
    LINK_GRAPH_LOCK_KEY,
    TRANSACTION,
    TRANSACTION_COLUMNS,
    json_text,
    pg_array,
    transaction_from_row,
)
from ..seam import cursor, deferred

NAME = "postgresql"

JSON_PARAM = "%s::jsonb"

ROW_LOCK = " FOR UPDATE"
ROW_LOCK_OF = " FOR UPDATE OF {alias}"

LINK_GRAPH_LOCKED = True

#: Locks: the link-graph lock (a transaction-scoped advisory lock), shared or exclusive,
#: until the database transaction ends.
LINK_GRAPH_LOCK_SHARED = "SELECT pg_advisory_xact_lock_shared(%s)"
LINK_GRAPH_LOCK_EXCLUSIVE = "SELECT pg_advisory_xact_lock(%s)"


def link_graph_lock(*, exclusive: bool) -> None:
    with cursor() as c:
        c.execute(LINK_GRAPH_LOCK_EXCLUSIVE if exclusive else LINK_GRAPH_LOCK_SHARED, [LINK_GRAPH_LOCK_KEY])


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


# --- PostgreSQL's own forms ------------------------------------------------------------------
# No SQLite counterpart: the link-graph lock (transactions/locks.py), and the engine's commit
# and rollback as server-side functions (brokers migration 0021), each one statement sent with
# its step's ``BEGIN`` and ``COMMIT`` in one round trip.


#: The engine functions' own SQLSTATEs, by what they mean (``transactions.manager`` turns
#: each into the project's error once: ``_engine_error``).
ENGINE_ERRORS = {
    "BT101": "not_found",
    "BT102": "backed_out",
    "BT103": "overdue",
    "BT104": "committed",
    "BT105": "not_active",
    "BT106": "definitions_changed",
    "BT107": "queue_full",
    "BT108": "queue_in_use",
    "BT109": "overdue_holder",
    "BT110": "lapsed",
    "BT111": "reports",
}


def engine_error(exc: BaseException) -> tuple[str, str, str] | None:
    """What an engine function's error means (an ``ENGINE_ERRORS`` value), its detail (a
    rolled-back unit of work's reason, a state, a full queue's facts as JSON) and its message,
    or None for any other error."""
    cause = exc.__cause__
    meaning = ENGINE_ERRORS.get(getattr(cause, "sqlstate", None) or "")
    if meaning is None:
        return None
    diag = getattr(cause, "diag", None)
    return meaning, getattr(diag, "message_detail", None) or "", getattr(diag, "message_primary", None) or ""


_ROW = ", ".join(f"(o.t).{name}" for name in TRANSACTION_COLUMNS)
#: ``baton_commit_v1(id, now, channel)``: the whole commit of a unit of work without marks
#: or links; one with them is left as it was (``managers``). Locks: the link-graph lock,
#: shared, the unit of work's row, then (several queues) the queue rows in id order, this
#: connection's release rows and the message rows it changes.
COMMIT_V1 = f"SELECT o.outcome, o.keys, {_ROW} FROM baton_commit_v1(%s, %s::timestamptz, %s) o"
#: ``baton_rollback_v1(id, reason, now, require_open, channel)``: the whole rollback of a unit
#: of work without marks or links whose gets came from no queue with a backout threshold;
#: another is left as it was (``managers``). Locks: the link-graph lock, shared, the unit of
#: work's row, this connection's release rows, then the message rows it changes.
ROLLBACK_V1 = f"SELECT o.outcome, o.keys, {_ROW} FROM baton_rollback_v1(%s, %s, %s::timestamptz, %s, %s) o"


def commit_call(*, transaction_id: str, now) -> tuple[str, list]:
    """``baton_commit_v1``'s statement and arguments (the bus's channel is added when it is
    sent: ``transactions.manager._called``); its rows: ``(outcome, keys, *row)``,
    ``outcome`` ``done`` (committed now), ``resolved`` (committed before) or ``managers``
    (nothing changed: it has marks or links). Errors as ``ENGINE_ERRORS`` say."""
    return COMMIT_V1, [transaction_id, now]


def rollback_call(*, transaction_id: str, reason: str, now, require_open: bool) -> tuple[str, list]:
    """``baton_rollback_v1``'s statement and arguments, as ``commit_call``: ``outcome``
    ``done``, ``resolved`` (rolled back or committed before) or ``managers`` (nothing
    changed)."""
    return ROLLBACK_V1, [transaction_id, reason, now, require_open]


def graph_lock_shared_and_links(*, transaction_id: str) -> tuple[bool, Transaction | None]:
    """PostgreSQL: take the link-graph lock shared (until the database transaction ends,
    see transactions/locks.py), say whether the unit of work has a link either way, and
    read its row ``FOR UPDATE`` (None if there is none), in one round trip. Lock order: the
    graph lock, then the row (the statements run in that order)."""
    sql = (
        f"SELECT pg_advisory_xact_lock_shared(%s), EXISTS (SELECT 1 FROM {LINK}"
        f" WHERE upstream_id = %s OR downstream_id = %s);"
        f" SELECT {_TXN_COLUMN_LIST} FROM {TRANSACTION} WHERE id = %s FOR UPDATE"
    )
    params = [LINK_GRAPH_LOCK_KEY, transaction_id, transaction_id, transaction_id]
    with cursor() as c:
        c.execute(sql, params)
        linked = c.fetchone()[1]
        c.nextset()
        row = c.fetchone()
    return linked, None if row is None else transaction_from_row(row)

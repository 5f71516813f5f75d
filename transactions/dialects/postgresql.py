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
    transactions_resolve,
)
from ..seam import cursor, deferred, seam

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


# --- PostgreSQL's own forms ------------------------------------------------------------------
# No SQLite counterpart: the link-graph lock (transactions/locks.py) and the commit and
# rollback sent whole in one round trip with a guard among their statements
# (``transactions.manager``'s ``_commit_at_once`` and ``_rollback_at_once``).


#: The SQLSTATE of ``baton_require`` (transactions migration 0007, brokers migration 0010):
#: a guard sent among a step's statements said no.
GUARD_SQLSTATE = "BT001"


def guard_refused(exc: BaseException) -> bool:
    """Whether a database error is ``baton_require``'s: the step was undone by its guard."""
    return getattr(exc.__cause__, "sqlstate", None) == GUARD_SQLSTATE


def commit_at_once(*, transaction_id: str, now, parts: Sequence, notify: str | None, rows: list) -> None:
    """PostgreSQL: a whole commit, deferred, so that it travels with its ``COMMIT`` in one
    round trip, for a unit of work that needs nothing read first. In order:

    1. the link-graph lock, shared (as every commit takes it: transactions/locks.py);
    2. the guard (``_at_once_guard``), which also wants the unit of work not past its
       deadline (the careful way rolls an overdue one back);
    3. the managers' writes;
    4. the row's final state and the journal's commit event (its broker from the row).

    A refused guard raises ``GUARD_SQLSTATE`` and nothing after it runs (``guard_refused``).
    Locks: the graph lock, the unit of work's row, then what the managers' writes lock."""
    _at_once_guard(
        transaction_id=transaction_id,
        parts=parts,
        notify=notify,
        rows=rows,
        condition=("(deadline_at IS NULL OR deadline_at > %s)", [dt_param(now)]),
    )
    for part in parts:
        for sql, params in part.writes:
            deferred(sql, params)
    transactions_resolve(transaction_ids=[transaction_id], state="committed", resolved_at=now)
    deferred(
        f"INSERT INTO {JOURNAL} ({', '.join(_JOURNAL_COLUMNS)}) SELECT %s::timestamptz, 'commit', broker, '', id, '',"
        f" '{{}}'::jsonb, 1 FROM {TRANSACTION} WHERE id = %s",
        [dt_param(now), transaction_id],
    )


def rollback_at_once(*, transaction_id: str, reason: str, now, parts: Sequence, notify: str | None, rows: list) -> None:
    """PostgreSQL: a whole rollback, deferred, so that it travels with its ``COMMIT`` in one
    round trip, for a unit of work that needs nothing read first (no marks, no links: no
    cascade). As ``commit_at_once``: the graph lock shared, the guard (``_at_once_guard``;
    an overdue unit of work is rolled back all the same), the managers' writes, then the
    row's final state with ``reason`` and the journal's rollback event. Locks: the graph
    lock, the unit of work's row, then what the managers' writes lock."""
    _at_once_guard(transaction_id=transaction_id, parts=parts, notify=notify, rows=rows)
    for part in parts:
        for sql, params in part.writes:
            deferred(sql, params)
    transactions_resolve(transaction_ids=[transaction_id], state="rolled_back", resolved_at=now, reason=reason)
    deferred(
        f"INSERT INTO {JOURNAL} ({', '.join(_JOURNAL_COLUMNS)}) SELECT %s::timestamptz, 'rollback', broker, '', id,"
        f" '', jsonb_build_object('reason', %s::text), 1 FROM {TRANSACTION} WHERE id = %s",
        [dt_param(now), reason, transaction_id],
    )


def _at_once_guard(
    *, transaction_id: str, parts: Sequence, notify: str | None, rows: list, condition: tuple[str, list] = ("true", [])
) -> None:
    """The link-graph lock, shared, then the guard of a commit or rollback sent whole: the
    unit of work's row ``FOR UPDATE`` if it is active, has no marks and meets ``condition``,
    then the managers' common table expressions; ``baton_require`` that the row was found,
    has no link either way and that every resource manager's conditions (``parts``:
    ``AtOnce``) hold; its answer (added to ``rows``): the wake-up keys (the managers', and
    ``txn:<id>``), then the row's columns. With ``notify`` (the wake-up channel) it also
    ``NOTIFY``s the keys, delivered at commit."""
    ctes = "".join(f" {sql}," for part in parts for sql, _ in part.ctes)
    ctes_params = [v for part in parts for _, params in part.ctes for v in params]
    require = " AND ".join(f"({sql})" for part in parts for sql, _ in part.require) or "true"
    require_params = [v for part in parts for _, params in part.require for v in params]
    keys = [part.keys for part in parts if part.keys is not None]
    keys_sql = " || ".join([f"({sql})" for sql, _ in keys] + ["ARRAY['txn:' || %s::text]"])
    keys_params = [v for _, params in keys for v in params] + [transaction_id]
    notified = ""
    notify_params: list = []
    if notify:
        payload = "array_to_string(k.keys, ' ')"
        notified = f", pg_notify(%s, CASE WHEN length({payload}) <= 7000 THEN {payload} ELSE '*' END)"
        notify_params = [notify]
    deferred("SELECT pg_advisory_xact_lock_shared(%s)", [LINK_GRAPH_LOCK_KEY])
    deferred(
        f"WITH t AS (SELECT {_TXN_COLUMN_LIST} FROM {TRANSACTION} WHERE id = %s AND state = 'active'"
        f" AND marks = '[]'::jsonb AND {condition[0]} FOR UPDATE),{ctes}"
        f" k AS (SELECT {keys_sql} AS keys)"
        f" SELECT baton_require(EXISTS (SELECT 1 FROM t)"
        f" AND NOT EXISTS (SELECT 1 FROM {LINK} WHERE upstream_id = %s OR downstream_id = %s)"
        f" AND {require}, 'the careful way'), k.keys{notified}, t.* FROM k LEFT JOIN t ON true",
        [
            transaction_id,
            *condition[1],
            *ctes_params,
            *keys_params,
            transaction_id,
            transaction_id,
            *require_params,
            *notify_params,
        ],
        rows=rows,
    )


def at_once_answer(rows: list) -> tuple[list[str], Transaction]:
    """``commit_at_once``'s and ``rollback_at_once``'s answer: the wake-up keys and the unit of work's row as read
    (before its final state)."""
    row = rows[0]
    first = 3 if len(row) > 2 + len(TRANSACTION_COLUMNS) else 2
    return list(row[1]), transaction_from_row(row[first:])


def graph_lock_shared_and_links(
    *, transaction_id: str, read: tuple[str, Sequence] | None = None
) -> tuple[bool, Transaction | None]:
    """PostgreSQL: take the link-graph lock shared (until the database transaction ends,
    see transactions/locks.py), say whether the unit of work has a link either way, and
    read its row ``FOR UPDATE`` (None if there is none), in one round trip. Lock order: the
    graph lock, then the row (the statements run in that order).

    ``read``: a statement that takes no lock, ``(sql, params)``, sent after them in the same
    round trip; its rows are kept for ``Seam.taken_ahead`` (the commit's look at what its unit of
    work did to messages: the row lock just taken keeps those rows still)."""
    sql = (
        f"SELECT pg_advisory_xact_lock_shared(%s), EXISTS (SELECT 1 FROM {LINK}"
        f" WHERE upstream_id = %s OR downstream_id = %s);"
        f" SELECT {_TXN_COLUMN_LIST} FROM {TRANSACTION} WHERE id = %s FOR UPDATE"
    )
    params = [LINK_GRAPH_LOCK_KEY, transaction_id, transaction_id, transaction_id]
    with cursor() as c:
        c.execute(sql if read is None else f"{sql}; {read[0]}", params if read is None else params + list(read[1]))
        linked = c.fetchone()[1]
        c.nextset()
        row = c.fetchone()
        if read is not None:
            c.nextset()
            seam().read_ahead(read[0], read[1], c.fetchall())
    return linked, None if row is None else transaction_from_row(row)

"""PostgreSQL's message and queue statements (``brokers.dialects``), with the row locks each
takes. Lock order (docs/concurrency.md): link-graph lock → transaction rows → queue rows
(in id order) → message rows."""

from __future__ import annotations

from typing import Sequence

from transactions.queries import cursor, deferred, pg_array, pg_scalar

from ..models import Message
from ..queries import (
    _GET_START_NAMED,
    _RESERVE_CHECKED_RETURNING,
    _RESERVE_RETURNING,
    _RETURNING_LIST,
    _ROW_AND_VERSION,
    MESSAGE,
    QUEUE,
    RELEASE,
    _choose_sql,
    _take_modify,
    _taken_in_order,
    put_names,
    put_split,
)

#: Locks: the named unit of work's row, ``FOR UPDATE``, until the database transaction ends.
GET_START_NAMED = _GET_START_NAMED + " FOR UPDATE OF t"
#: Locks: the unit of work's row, ``FOR UPDATE``, until the database transaction ends.
ROW_AND_VERSION = _ROW_AND_VERSION + " FOR UPDATE"
#: Release rows per queue: one per thread, taken in turn, so that gets of one queue on
#: different threads do not wait for each other's release row.
RELEASE_STRIPES = 8
#: Locks: the queue's row.
QUEUE_ROW_LOCKED = f"SELECT id FROM {QUEUE} WHERE id = %s FOR UPDATE"
#: Locks: the queue's release rows, in stripe order.
RELEASES_LOCKED = f"SELECT stripe, released FROM {RELEASE} WHERE queue_id = %s ORDER BY stripe FOR UPDATE"
#: Locks: the chosen rows; rows another transaction has locked are skipped, so competing
#: consumers take different messages.
CHOOSE_LOCKS = " FOR UPDATE SKIP LOCKED"
#: Locks: the messages, in id order.
BY_LOCK_TOKENS_LOCKS = " ORDER BY m.id FOR UPDATE OF m"

#: Locks: the queue rows, in id order.
QUEUES_LOCK = f"SELECT id FROM {QUEUE} WHERE id = ANY(%s) ORDER BY id FOR UPDATE"

#: The rows a materialised CTE ``chosen`` picked (and locked: ``FOR UPDATE``, so that no other
#: transaction moves them), reached by their place in the table (a TID scan), whatever the
#: planner thinks of the table's size. Joined by id (``id IN (SELECT id FROM chosen)``), a
#: plan made on an empty table compared the chosen ids with every free message of every
#: queue (2026-11-29: 45,000 rows for a get of 100, 20 ms of the database's CPU), or read
#: every free message of the queue through ``msg_get_fifo``. No re-check that a row is
#: still free: ``chosen`` locked it (``FOR UPDATE`` re-evaluates the choice on a row changed
#: meanwhile) and the lock holds to the commit; left in, the condition would let the planner
#: read the rows through ``msg_get_fifo``, whose predicate it implies.
CHOSEN_ROWS = "ctid = ANY(ARRAY(SELECT ctid FROM chosen))"
#: What ``chosen`` selects for ``CHOSEN_ROWS``.
CHOSEN_COLUMNS = "ctid"

#: A peek-lock of the chosen rows (``{choose}``: the choice, which locked them): a new random
#: token (16 random bytes as hex, from the database's own generator), the lock's end,
#: delivery count + 1.
LOCK_CHOSEN = (
    "WITH chosen AS MATERIALIZED ({choose}) UPDATE "
    + MESSAGE
    + " SET lock_token = replace(gen_random_uuid()::text, '-', ''), locked_until = %s,"
    " delivery_count = delivery_count + 1 WHERE " + CHOSEN_ROWS + " RETURNING " + _RETURNING_LIST
)

#: The queue's peek-locks that ran out, released, each token kept as the lapsed one. Locks:
#: those message rows, ``FOR UPDATE SKIP LOCKED`` in a materialised CTE, so a concurrent
#: get releasing the same locks, or a holder settling one, is never waited for.
LOCKS_LAPSE = (
    f"WITH chosen AS MATERIALIZED (SELECT {CHOSEN_COLUMNS} FROM {MESSAGE} WHERE lock_token IS NOT NULL"
    " AND locked_until <= %s AND queue_id = %s AND get_transaction_id IS NULL FOR UPDATE SKIP LOCKED)"
    f" UPDATE {MESSAGE} SET lapsed_lock_token = lock_token, lock_token = NULL, locked_until = NULL"
    f" WHERE {CHOSEN_ROWS} RETURNING id, delivery_count"
)


def queue_reserve(*, queue_id: int, count: int, commit_count: int, max_depth_checked: bool) -> int | None:
    with cursor() as c:
        if max_depth_checked:
            c.execute(_RESERVE_CHECKED_RETURNING, [count, commit_count, queue_id, count, queue_id])
        else:
            c.execute(_RESERVE_RETURNING, [count, commit_count, queue_id])
        row = c.fetchone()
    return None if row is None else row[0] - commit_count


def queues_lock(*, ids: list[int], even_one: bool) -> None:
    """A single queue is left to the counter ``UPDATE`` that follows (it locks the row before
    any message row is touched), unless ``even_one``."""
    if len(ids) > 1 or (ids and even_one):
        with cursor() as c:
            c.execute(QUEUES_LOCK, [ids])


_put_statements: dict[tuple[int, ...], str] = {}


def _put_statement(varying: tuple[int, ...]) -> str:
    """The put's INSERT: the shared columns bound once in the ``SELECT`` list, the varying
    ones from ``unnest`` of one array per column, each cast to its column's type: the
    statement stays short whatever the number of rows (the driver parses a statement's
    placeholders on the client, and a ``VALUES`` list of 100 rows cost it about 8 ms a
    call). Made once per set of varying columns."""
    sql = _put_statements.get(varying)
    if sql is None:
        from django.db import connection

        def cast(name: str) -> str:  # text, not varchar(n): an explicit cast would cut a value too long
            db_type = Message._meta.get_field(name).db_type(connection)
            return "text" if db_type.startswith("varchar") else db_type

        shared, names = put_names(varying)
        from ..queries import PUT_COLUMNS

        scalars = ", ".join([f"%s::{cast(name)}" for name in shared] + ["v.*"])
        arrays = ", ".join(f"%s::{cast(PUT_COLUMNS[i])}[]" for i in varying)
        sql = f"INSERT INTO {MESSAGE} ({names}) SELECT {scalars} FROM unnest({arrays}) v"
        if len(_put_statements) < 1024:
            _put_statements[varying] = sql
    return sql


def messages_insert(*, rows: list[tuple], messages: Sequence) -> None:
    """Deferred: nothing reads the rows back in this step (a put answers with message ids,
    not row ids), so the INSERT travels with the step's next statement or its COMMIT; the
    instances keep no row id. New rows."""
    varying, columns, shared = put_split(rows)
    deferred(_put_statement(varying), [pg_scalar(value) for value in shared] + [pg_array(columns[i]) for i in varying])


def take_sql(*, get_transaction_id: str | None, **choice) -> tuple[str, list]:
    """``messages_take``'s statement and parameters; ``choice``: ``_choose_sql``'s arguments.
    PostgreSQL may run an IN (subquery with LIMIT) more than once and take more rows than
    asked: the choice is a materialised CTE, evaluated exactly once."""
    choose, params = _choose_sql(**choice, columns=CHOSEN_COLUMNS)
    sql = f"WITH chosen AS MATERIALIZED ({choose}) " + _take_modify(
        picked=CHOSEN_ROWS, get_transaction_id=get_transaction_id
    )
    return sql, [*params, get_transaction_id] if get_transaction_id is not None else params


def messages_take(*, get_transaction_id: str | None, priority_first: bool, commit_ordered: bool, **choice) -> list:
    """One statement: the chosen rows locked ``FOR UPDATE SKIP LOCKED``, then reached by
    their places (``CHOSEN_ROWS``) and marked gotten or deleted, returned."""
    sql, params = take_sql(
        get_transaction_id=get_transaction_id, priority_first=priority_first, commit_ordered=commit_ordered, **choice
    )
    with cursor() as c:
        c.execute(sql, params)
        rows = c.fetchall()
    return _taken_in_order(rows, priority_first=priority_first, commit_ordered=commit_ordered)


def messages_lock(*, locked_until, **choice) -> list:
    choose, params = _choose_sql(**choice, columns=CHOSEN_COLUMNS)
    with cursor() as c:
        c.execute(LOCK_CHOSEN.format(choose=choose), [*params, locked_until])
        return c.fetchall()


def messages_locks_lapse(*, queue_id: int, now) -> list[tuple[int, int]]:
    with cursor() as c:
        c.execute(LOCKS_LAPSE, [now, queue_id])
        return c.fetchall()

"""PostgreSQL's message and queue statements (``brokers.dialects``), with the row locks each
takes. Lock order (docs/concurrency.md): link-graph lock → transaction rows → queue rows
(in id order) → message rows."""

from __future__ import annotations

from typing import Sequence

from transactions.models import Transaction
from transactions.queries import (
    TRANSACTION_COLUMNS,
    cursor,
    deferred,
    dt_param,
    pg_array,
    pg_scalar,
    transaction_from_row,
)
from transactions.seam import deferred_flush

from ..models import Message
from ..queries import (
    _GET_START_NAMED,
    _RESERVE_CHECKED_RETURNING,
    _RESERVE_RETURNING,
    _RETURNING_LIST,
    MESSAGE,
    MESSAGE_COLUMNS,
    QUEUE,
    RELEASE,
    _choose_sql,
    _stripe,
    _taken_in_order,
    put_names,
    put_split,
)

#: Locks: the named unit of work's row, ``FOR UPDATE``, until the database transaction ends.
GET_START_NAMED = _GET_START_NAMED + " FOR UPDATE OF t"
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


#: Locks: the queue's ordered-getters lock (a transaction-scoped advisory lock keyed by the
#: queue's id), until the database transaction ends; not the queue's row (``ordering``).
ORDERED_GETTERS_LOCK = "SELECT pg_advisory_xact_lock(%s)"
ORDERED_GETTERS_LOCK_KEY = 0x6F72_0000_0000  # + queue id


def ordered_getters_lock(*, queue_id: int) -> None:
    with cursor() as c:
        c.execute(ORDERED_GETTERS_LOCK, [ORDERED_GETTERS_LOCK_KEY + queue_id])


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


#: ``baton_definitions_check_v1(version)`` (brokers migration 0024): raises BT106 unless the
#: definitions version is still ``version``. Takes no lock.
DEFINITIONS_CHECK_V1 = "SELECT baton_definitions_check_v1(%s::bigint)"


def definitions_check(*, version: int) -> None:
    """Deferred: it travels with the step's writes and its ``COMMIT`` in one round trip; a
    stale cache raises BT106 there and the step is undone (``DefinitionsChanged``, mapped by
    ``transactions.manager.engine_called``)."""
    deferred(DEFINITIONS_CHECK_V1, [version])


def _take_modify(*, picked: str, get_transaction_id: str | None) -> str:
    """PostgreSQL: the take's ``UPDATE`` (under a unit of work: one ``%s``, its id) or
    ``DELETE`` of the rows the condition ``picked`` names (locked by the choice)."""
    if get_transaction_id is not None:
        return (
            f"UPDATE {MESSAGE} SET get_transaction_id = %s, delivery_count = delivery_count + 1"
            f" WHERE {picked} RETURNING {_RETURNING_LIST}"
        )
    return f"DELETE FROM {MESSAGE} WHERE {picked} RETURNING {_RETURNING_LIST}"


_GET_LIST = ", ".join(
    "NULL::varchar AS put_transaction_id" if name == "put_transaction_id" else f"o.{name}" for name in MESSAGE_COLUMNS
)
#: ``baton_get_v1(...)`` (brokers migration 0023): an unordered destructive get, not
#: pre-emptive, without a connection; its rows, the messages taken (their puts committed:
#: ``put_transaction_id`` NULL, as a get's read list gives it). Locks: the named unit of
#: work's row, ``FOR UPDATE``, then the messages taken (``SKIP LOCKED``), then this thread's
#: release row of the queue (a final get).
GET_V1 = (
    f"SELECT {_GET_LIST} FROM baton_get_v1(%s::bigint, %s::integer, %s::text, %s::text, %s::text, %s::text,"
    " %s::timestamptz, %s::integer, %s::integer, %s::timestamptz, %s::integer, %s::boolean, %s::boolean,"
    " %s::text, %s::text, %s::text, %s::integer, %s::boolean, %s::text) o"
)


def get_call(
    *,
    version: int,
    queue_id: int,
    broker: str,
    queue: str,
    transaction_id: str | None,
    begun_id: str | None,
    deadline_at,
    user_id: int | None,
    begun_user_id: int | None,
    now,
    limit: int,
    priority_first: bool,
    commit_ordered: bool,
    match: dict,
    reports: bool,
) -> tuple[str, list]:
    """``baton_get_v1``'s statement and arguments; the wake-up channel (None: none) is the
    last argument, added by the caller. Its errors as ``ENGINE_ERRORS`` say."""
    return GET_V1, [
        version,
        queue_id,
        broker,
        queue,
        transaction_id,
        begun_id,
        deadline_at,
        user_id,
        begun_user_id,
        now,
        limit,
        priority_first,
        commit_ordered,
        match.get("msg_id") or None,
        match.get("correl_id") or None,
        match.get("group_id") or None,
        _stripe(),
        reports,
    ]


#: ``baton_messages_commit_v1(ids)`` (brokers migration 0021): what a group of units of work
#: did to messages made permanent (``MessageStore.resources_commit``); its answer, the
#: queues' wake-up keys. Locks: with several queues their rows in id order; a
#: commit-ordered queue's row (its commit sequences); this connection's release rows of the
#: queues its gets came from; the message rows it changes.
MESSAGES_COMMIT_V1 = "SELECT baton_messages_commit_v1(%s::text[])"
#: ``baton_messages_rollback_v1(id, now)``: a rolled-back unit of work's puts gone (their room
#: back) and its gets returned, each with its backout event (``MessageStore.resources_rollback``
#: when no message moves); its answer, the wake-up keys of the queues the gets return to.
#: Locks: this connection's release rows, then the message rows it changes.
MESSAGES_ROLLBACK_V1 = "SELECT baton_messages_rollback_v1(%s, %s::timestamptz)"


def messages_commit(*, transaction_ids: Sequence[str]) -> list[str]:
    with cursor() as c:
        c.execute(MESSAGES_COMMIT_V1, [pg_array(list(transaction_ids))])
        return list(c.fetchone()[0])


def messages_rollback(*, transaction_id: str, removed: dict[int, int], names: dict, now) -> list[str]:
    with cursor() as c:
        c.execute(MESSAGES_ROLLBACK_V1, [transaction_id, now])
        return list(c.fetchone()[0])


_TXN_ROW = ", ".join(f"(o.t).{name}" for name in TRANSACTION_COLUMNS)
#: ``baton_put_v1(version, txn, broker, user_id, now, queue_id, count, commit_count)``
#: (brokers migration 0022): a put's checks and reservation; its answer, the first commit
#: sequence handed out (None when none) and the named unit of work's row. Locks: the named
#: unit of work's row, ``FOR UPDATE``, then the queue's row (its counters), both until the
#: database transaction ends.
PUT_V1 = f"SELECT o.base, {_TXN_ROW} FROM baton_put_v1(%s, %s, %s, %s, %s::timestamptz, %s, %s, %s) o"


def put(
    *,
    version: int,
    transaction_id: str | None,
    broker: str,
    user,
    now,
    queue_id: int,
    count: int,
    commit_count: int,
    joined,
) -> list:
    """``baton_put_v1``, deferred: it travels with the put's rows, journal events and
    ``COMMIT`` in one round trip, or with the first statement the put sends before them.
    Returns the list its answer is added to once it has run (``put_answer``). ``user``: who
    puts (None: system code; a superuser's unit of work is not checked for its owner); the
    function checks the named unit of work itself (``joined``, the service's check, is not
    called)."""
    user_id = None if user is None or getattr(user, "is_superuser", False) else user.pk
    answer: list = []
    deferred(
        PUT_V1,
        [version, transaction_id, broker, user_id, dt_param(now), queue_id, count, commit_count],
        rows=answer,
    )
    return answer


def put_answer(answer: list) -> tuple[int | None, Transaction | None]:
    """``put``'s answer, sent now if it has not been: ``(base, row)``, the first commit
    sequence handed out and the named unit of work's row (None when the put named none)."""
    if not answer:
        deferred_flush()
    base, *row = answer[0]
    return base, None if row[0] is None else transaction_from_row(row)

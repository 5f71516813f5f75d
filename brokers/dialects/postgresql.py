"""PostgreSQL's message and queue statements (``brokers.dialects``), with the row locks each
takes. Lock order (docs/concurrency.md): link-graph lock → transaction rows → queue rows
(in id order) → message rows."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Sequence

from transactions.dialects.postgresql import GUARD_SQLSTATE, guard_refused  # noqa: F401  (the guards' refusal)
from transactions.models import Transaction
from transactions.queries import (
    JOURNAL,
    TRANSACTION,
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
    _COLUMN_LIST,
    _GET_START_NAMED,
    _LAPSED,
    _OVERDUE,
    _RESERVE_CHECKED_RETURNING,
    _RESERVE_RETURNING,
    _RETURNING_LIST,
    _ROW_AND_VERSION,
    MESSAGE,
    MESSAGE_COLUMNS,
    QUEUE,
    RELEASE,
    VERSION,
    _choose_sql,
    _order_by,
    _stripe,
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


# --- PostgreSQL's own forms ------------------------------------------------------------------
# No SQLite counterpart: a begin and an unordered destructive get sent whole in one round
# trip with a guard among their statements (``baton_require``: a refusal raises
# ``GUARD_SQLSTATE`` and the step is undone).


def definitions_guard(*, version: int) -> None:
    """PostgreSQL: a statement among the step's others, sent without waiting for an answer,
    that raises ``GUARD_SQLSTATE`` unless the definitions version is still ``version``: the
    step is undone (``guard_refused``). Takes no lock."""
    deferred(
        f"SELECT baton_require((SELECT version FROM {VERSION} WHERE id = 1) = %s, 'the careful way')",
        [version],
    )


def _take_modify(*, picked: str, get_transaction_id: str | None) -> str:
    """PostgreSQL: the take's ``UPDATE`` (under a unit of work: one ``%s``, its id) or
    ``DELETE`` of the rows the condition ``picked`` names (locked by the choice)."""
    if get_transaction_id is not None:
        return (
            f"UPDATE {MESSAGE} SET get_transaction_id = %s, delivery_count = delivery_count + 1"
            f" WHERE {picked} RETURNING {_RETURNING_LIST}"
        )
    return f"DELETE FROM {MESSAGE} WHERE {picked} RETURNING {_RETURNING_LIST}"


#: ``put_time`` as Python's ``isoformat()`` writes it (UTC, microseconds only when not zero):
#: the journal's detail of a get written by the database (``get_at_once``) is the same text.
_PUT_TIME_ISO = (
    "to_char({c} AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS')"
    " || CASE WHEN to_char({c}, 'US') = '000000' THEN '' ELSE '.' || to_char({c}, 'US') END || '+00:00'"
)


@dataclass(frozen=True)
class Begun:
    """The unit of work a get begins if it takes anything (``get_at_once``)."""

    transaction_id: str
    deadline_at: datetime | None
    user_id: int | None


def get_guard_sql(
    *, queue_id: int, broker: str, transaction_id: str | None, user_id: int | None, version: int, now
) -> tuple[str, list]:
    """The guard of ``get_at_once`` (its first statement; locks: the named unit of work's row)."""
    t = dt_param(now)
    params: list = []
    head, joined = "", ""
    if transaction_id is not None:
        owner = " AND user_id = %s" if user_id is not None else ""
        head = (
            f"WITH t AS (SELECT id FROM {TRANSACTION} WHERE id = %s AND state = 'active' AND broker = %s"
            f" AND (deadline_at IS NULL OR deadline_at > %s){owner} FOR UPDATE) "
        )
        params += [transaction_id, broker, t] + ([user_id] if user_id is not None else [])
        joined = " AND EXISTS (SELECT 1 FROM t)"
    return (
        f"{head}SELECT baton_require((SELECT version FROM {VERSION} WHERE id = 1) = %s{joined}"
        f" AND EXISTS (SELECT 1 FROM {QUEUE} q WHERE q.id = %s"
        f" AND (q.exclusive_holder = '' OR q.exclusive_until IS NULL OR q.exclusive_until <= %s)"
        f" AND NOT {_LAPSED} AND NOT EXISTS ({_OVERDUE})), 'the careful way')",
        [*params, version, queue_id, t, t, t],
    )


def get_at_once(
    *,
    queue_id: int,
    queue_name: str,
    broker: str,
    transaction_id: str | None,
    begun: Begun | None,
    user_id: int | None,
    version: int,
    now,
    notify: str | None,
    rows: list,
    **choice,
) -> None:
    """PostgreSQL: an unordered destructive get sent whole, deferred, so that it travels
    with its ``COMMIT`` in one round trip, for a get that trusts the definitions cache and
    has no connection. Two statements:

    1. the guard: the named unit of work's row ``FOR UPDATE`` if the get may join it
       (active, of ``broker``, not past its deadline, ``user_id``'s when given), and
       ``baton_require`` that it was found, that the definitions version is ``version``,
       that no consumer holds the queue's exclusive input, that no peek-lock on the queue has
       run out and that no overdue unit of work holds its messages (what ``get_start``
       reads for the careful way to settle first);
    2. the take (``messages_take``'s choice and ``UPDATE``, or ``DELETE`` for a final get)
       with, only if it took anything: the unit of work ``begun`` (its row and its begin
       event), the room given back on this thread's release row (a final get), the journal's
       get event (as ``journal_step_event`` writes it) and, with ``notify``, the queue's
       wake-up key (a final get). Its rows (added to ``rows``) are the messages taken, in no
       order; ``baton_require`` refuses a message that asks for reports (the careful way
       sends them).

    A refusal raises ``GUARD_SQLSTATE``: nothing after it runs (``guard_refused``). Locks:
    the unit of work's row, then the messages taken (``SKIP LOCKED``), then the release row,
    as the careful way takes them. ``choice``: ``messages_take``'s arguments for choosing."""
    t = dt_param(now)
    deferred(
        *get_guard_sql(
            queue_id=queue_id, broker=broker, transaction_id=transaction_id, user_id=user_id, version=version, now=now
        )
    )
    taker = transaction_id or (begun.transaction_id if begun else None)
    choose, take_params = _choose_sql(queue_id=queue_id, now=now, columns=CHOSEN_COLUMNS, **choice)
    modify = _take_modify(picked=CHOSEN_ROWS, get_transaction_id=taker)
    take_params += [taker] if taker is not None else []
    ctes, values = [], []
    iso = _PUT_TIME_ISO.format(c="put_time")
    order = _order_by(
        priority_first=choice["priority_first"], commit_ordered=choice["commit_ordered"], with_uncommitted=False
    )
    events = (
        "SELECT 2 AS o, %s::timestamptz AS at, 'get' AS kind, %s AS broker, %s AS queue, %s AS transaction_id,"
        " CASE WHEN COUNT(*) = 1 THEN MIN(msg_id) ELSE '' END AS msg_id,"
        f" CASE WHEN COUNT(*) = 1 THEN jsonb_build_object('put_time', MIN({iso}), 'preemptive', false)"
        " ELSE jsonb_build_object('messages', jsonb_agg(jsonb_build_object("
        f"'msg_id', msg_id, 'put_time', {iso}, 'preemptive', false) ORDER BY {order})) END AS detail,"
        " COUNT(*) AS count FROM taken HAVING COUNT(*) > 0"
    )
    event_values: list = [t, broker, queue_name, transaction_id or (begun.transaction_id if begun else "")]
    if begun is not None:
        ctes.append(
            f"u AS (INSERT INTO {TRANSACTION} (id, broker, state, reason, owner, marks, created_at, deadline_at,"
            " user_id) SELECT %s, %s, 'active', '', '', '[]'::jsonb, %s::timestamptz, %s::timestamptz, %s::integer"
            " WHERE EXISTS (SELECT 1 FROM taken))"
        )
        values += [begun.transaction_id, broker, t, dt_param(begun.deadline_at), begun.user_id]
        events = (
            "SELECT 1 AS o, %s::timestamptz AS at, 'begin' AS kind, %s AS broker, '' AS queue,"
            " %s AS transaction_id, '' AS msg_id, '{}'::jsonb AS detail, 1 AS count"
            f" WHERE EXISTS (SELECT 1 FROM taken) UNION ALL {events}"
        )
        event_values = [t, broker, begun.transaction_id, *event_values]
    elif transaction_id is None:  # a final get gives its room back
        ctes.append(
            f"r AS (INSERT INTO {RELEASE} (queue_id, stripe, released) SELECT %s::integer, %s::integer, COUNT(*)"
            f" FROM taken HAVING COUNT(*) > 0 ON CONFLICT (queue_id, stripe)"
            f" DO UPDATE SET released = {RELEASE}.released + excluded.released)"
        )
        values += [queue_id, _stripe()]
    ctes.append(
        f"j AS (INSERT INTO {JOURNAL} (at, kind, broker, queue, transaction_id, msg_id, detail, count)"
        f" SELECT at, kind, broker, queue, transaction_id, msg_id, detail, count FROM ({events}) e ORDER BY o)"
    )
    values += event_values
    notified, notify_values = "", []
    if notify and transaction_id is None and begun is None:
        notified, notify_values = ", pg_notify(%s, %s)", [notify, f"queue:{queue_id}"]
    deferred(
        f"WITH chosen AS MATERIALIZED ({choose}), taken AS ({modify}), {', '.join(ctes)}"
        f" SELECT baton_require(report = '[]'::jsonb, 'the careful way'){notified}, {_COLUMN_LIST} FROM taken",
        [*take_params, *values, *notify_values],
        rows=rows,
    )


def taken_at_once(rows: list, *, priority_first: bool, commit_ordered: bool) -> list[Message]:
    """``get_at_once``'s answer: the messages taken, in delivery order."""
    skip = len(rows[0]) - len(MESSAGE_COLUMNS) if rows else 0
    return _taken_in_order([row[skip:] for row in rows], priority_first=priority_first, commit_ordered=commit_ordered)


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
    version: int | None,
    transaction_id: str | None,
    broker: str,
    user_id: int | None,
    now,
    queue_id: int,
    count: int,
    commit_count: int,
) -> list:
    """``baton_put_v1``, deferred: it travels with the put's rows, journal events and
    ``COMMIT`` in one round trip, or with the first statement the put sends before them.
    Returns the list its answer is added to once it has run (``put_answer``)."""
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

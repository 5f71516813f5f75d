"""The hot path's SQL for the message and queue tables: every statement that put, get,
commit and rollback run on them, in one place, with the locks each one takes.

Django's models define these tables (and migrations create them); the statements here are
written by hand because the ORM costs more in Python per statement than the database
spends running it (docs/performance.md). They run through Django's connection (so they
join the caller's atomic block and show in ``CaptureQueriesContext``) with ``%s``
placeholders on both databases.

Lock order (docs/concurrency.md): link-graph lock → transaction rows → queue rows (in id
order) → message rows. On SQLite every writer holds the database's write lock from
``BEGIN IMMEDIATE``, so the row locks named below are taken on PostgreSQL only.
"""

from __future__ import annotations

import itertools
import threading

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Iterable, Sequence

from transactions.models import OPEN_STATES
from transactions.queries import (  # noqa: F401  (some re-exported for the dialect modules)
    JOURNAL,
    TRANSACTION,
    TRANSACTION_COLUMNS,
    aware,
    cursor,
    deferred,
    dt_param,
    json_text,
    model_instance,
    pg_array,
    pg_scalar,
    seam,
    transaction_from_row,
)

from .dialects import dialect
from .models import Broker, DedupKey, DefinitionsVersion, Message, Queue, QueueRelease, ReceivedBatch

MESSAGE = Message._meta.db_table
QUEUE = Queue._meta.db_table
BROKER = Broker._meta.db_table
VERSION = DefinitionsVersion._meta.db_table
DEDUP = DedupKey._meta.db_table
RELEASE = QueueRelease._meta.db_table
RECEIVED = ReceivedBatch._meta.db_table

#: Every column of a message row, in the order the statements below read them.
MESSAGE_COLUMNS = tuple(f.attname for f in Message._meta.concrete_fields)
_COLUMN_LIST = ", ".join(MESSAGE_COLUMNS)
#: The columns a put writes (the rest keep their defaults: lock fields, dead-letter fields...).
PUT_COLUMNS = (
    "queue_id",
    "msg_id",
    "correl_id",
    "group_id",
    "msg_type",
    "priority",
    "persistent",
    "expires_at",
    "format",
    "reply_to_queue",
    "reply_to_broker",
    "report",
    "properties",
    "put_time",
    "put_application",
    "backout_count",
    "delivery_count",
    "dead_letter_reason",
    "dead_letter_queue",
    "transmission_header",
    "body",
    "commit_seq",
    "put_transaction_id",
    "feedback",
)
#: The open states of a unit of work, as the open-deadline index's condition writes them.
_OPEN = ", ".join(f"'{state}'" for state in OPEN_STATES)
_JSON_COLUMNS = {"report", "properties", "transmission_header"}
_DATETIME_COLUMNS = {"expires_at", "put_time", "locked_until"}


def put_committed_sql(column: str = "put_transaction_id") -> str:
    """SQL: the put of the message whose ``column`` names its unit of work is committed: put
    outside a unit of work, or by one now committed (a commit flips its unit of work's row
    and leaves its messages as they are, brokers/models.py). A primary-key look-up of the
    unit of work for a message that names one; no lock."""
    return f"({column} IS NULL OR (SELECT pt.state FROM {TRANSACTION} pt WHERE pt.id = {column}) = 'committed')"


def _put_open(column: str) -> str:
    """A read's ``put_transaction_id``: the unit of work that put the message while it is
    open, NULL once committed (what the rest of the engine reads the field as)."""
    return f"CASE WHEN {put_committed_sql(column)} THEN NULL ELSE {column} END AS put_transaction_id"


def _read_list(*, prefix: str = "", sqlite_times: bool = False) -> str:
    return ", ".join(
        _put_open(f"{prefix}{c}")
        if c == "put_transaction_id"
        else f"+{prefix}{c}"
        if sqlite_times and c in _DATETIME_COLUMNS
        else f"{prefix}{c}"
        for c in MESSAGE_COLUMNS
    )


#: Every column of a message as a statement returns it (``RETURNING``), its put's unit of
#: work only while open.
_RETURNING_LIST = _read_list()
#: SQLite: every column of a message as a get reads it, its times as ``+column``, an
#: expression, which the driver hands back as the stored text instead of passing it through
#: Django's converter (a Python call, a decode and ``parse_datetime`` a value); ``_datetime``
#: makes it an aware datetime in one call.
_SQLITE_READ_LIST = _read_list(sqlite_times=True)


# --- definitions ----------------------------------------------------------------------------


def definitions_version() -> int | None:
    """The definitions version (brokers/definitions.py); None when its row is missing (a
    flushed database: the next definition change writes it again). Takes no lock."""
    with cursor() as c:
        c.execute(f"SELECT version FROM {VERSION} WHERE id = 1")
        row = c.fetchone()
    return row[0] if row else None


def get_start(*, queue_id: int, transaction_id: str | None, now):
    """A get's first statement: the definitions version, the queue's exclusive-input lease
    (holder, until) and, for a get under a named unit of work, that unit of work's row,
    locked ``FOR UPDATE`` (PostgreSQL) until the database transaction ends. Returns
    ``(version, holder, until, unit_of_work, lapsed, overdue)``; ``unit_of_work`` None when
    no transaction was named or none has that id (the caller's own look-up then says why);
    None if the queue has gone.

    The same statement looks, without locks, for what a get must settle before it chooses
    (docs/semantics.md, "Expiry seen by the next get"): ``lapsed``, whether a message of the
    queue has a peek-lock that ran out by ``now`` (through the lock-expiry index: only
    locks already run out are read); ``overdue``, the id of one open unit of work past its
    deadline that got or put a message on the queue, else None (through the open-deadline
    index: only units of work already overdue are read)."""
    with cursor() as c:
        if transaction_id is not None:
            c.execute(*_get_start_sql(queue_id=queue_id, transaction_id=transaction_id, now=now))
            found = _get_started(c.fetchone(), named=True)
            if found is not None:
                return found
        c.execute(*_get_start_sql(queue_id=queue_id, transaction_id=None, now=now))
        return _get_started(c.fetchone(), named=False)


#: Whether a message of queue ``q`` has a peek-lock that ran out by ``%s`` (``get_start``,
#: and the guard of a get that trusts the definitions cache). Read through the lock-expiry
#: index (locks already run out, usually none), never through a get index, which would read
#: every free message of the queue: ``+m.queue_id`` is not an index key (SQLite), and
#: "not gotten" is written so that it does not imply the get indexes' predicate
#: (``get_transaction_id IS NULL``), which would let PostgreSQL's plan, made while the table
#: was small, scan ``msg_get_fifo`` whole (tests/brokers/test_get_cost.py,
#: tests/brokers/test_get_plan.py). A unit of work's id is never empty.
_LAPSED = (
    f"EXISTS (SELECT 1 FROM {MESSAGE} m WHERE m.lock_token IS NOT NULL AND m.locked_until <= %s"
    f" AND +m.queue_id = q.id AND COALESCE(m.get_transaction_id, '') = '')"
)

#: One open unit of work past its deadline at ``%s`` that got or put a message on queue ``q``
#: (through the open-deadline index: only units of work already overdue are read).
_OVERDUE = (
    f"SELECT o.id FROM {TRANSACTION} o WHERE o.state IN ({_OPEN}) AND o.deadline_at <= %s"
    f" AND (EXISTS (SELECT 1 FROM {MESSAGE} m WHERE m.get_transaction_id = o.id AND m.queue_id = q.id)"
    f" OR EXISTS (SELECT 1 FROM {MESSAGE} m WHERE m.put_transaction_id = o.id AND m.queue_id = q.id)) LIMIT 1"
)


def _get_start_sql(*, queue_id: int, transaction_id: str | None, now) -> tuple[str, list]:
    t = dt_param(now)
    if transaction_id is not None:
        return dialect().GET_START_NAMED, [t, t, queue_id, transaction_id]
    return _GET_START, [t, t, queue_id]


_GET_START_HEAD = (
    f"SELECT (SELECT version FROM {VERSION} WHERE id = 1), q.exclusive_holder, q.exclusive_until,"
    f" {_LAPSED}, ({_OVERDUE})"
)
_GET_START = f"{_GET_START_HEAD} FROM {QUEUE} q WHERE q.id = %s"
_GET_START_NAMED = (
    f"{_GET_START_HEAD}, {', '.join('t.' + name for name in TRANSACTION_COLUMNS)}"
    f" FROM {QUEUE} q, {TRANSACTION} t WHERE q.id = %s AND t.id = %s"
)


def _get_started(row, *, named: bool):
    if row is None:
        return None
    return row[0], row[1], aware(row[2]), transaction_from_row(row[5:]) if named else None, bool(row[3]), row[4]


_ROW_AND_VERSION = (
    f"SELECT {', '.join(TRANSACTION_COLUMNS)}, (SELECT version FROM {VERSION} WHERE id = 1)"
    f" FROM {TRANSACTION} WHERE id = %s"
)


# --- queue counters -------------------------------------------------------------------------

#: The room a queue's releases gave back, not yet folded into its ``reserved_depth``: read
#: without a lock in the statement that takes room (a release not committed yet has not
#: given its room back). Its parameter: the queue's id.
_RELEASED = f"(SELECT COALESCE(SUM(released), 0) FROM {RELEASE} WHERE queue_id = %s)"

_stripes = itertools.count()
_local = threading.local()


def _stripe() -> int:
    """This thread's release row of a queue (``dialect().RELEASE_STRIPES`` per queue): the
    same for the thread's life."""
    try:
        return _local.stripe
    except AttributeError:
        _local.stripe = next(_stripes) % dialect().RELEASE_STRIPES
        return _local.stripe


def queue_reserve(*, queue_id: int, count: int, commit_count: int, max_depth_checked: bool) -> int | None:
    """Reserve room for ``count`` messages and ``commit_count`` commit sequences; return the
    first of them (with none, a number to ignore), or None when the queue is full. Locks the
    queue's row (PostgreSQL) until the database transaction ends: commit sequences are handed
    out in commit order, and two puts never both take the last room. The releases are read,
    not locked (``_RELEASED``)."""
    return dialect().queue_reserve(
        queue_id=queue_id, count=count, commit_count=commit_count, max_depth_checked=max_depth_checked
    )


_RESERVE_SET = f"UPDATE {QUEUE} SET reserved_depth = reserved_depth + %s, next_commit_seq = next_commit_seq + %s"
_RESERVE = f"{_RESERVE_SET} WHERE id = %s"
_RESERVE_CHECKED = f"{_RESERVE_SET} WHERE id = %s AND reserved_depth + %s - {_RELEASED} <= max_depth"
_RESERVE_RETURNING = f"{_RESERVE} RETURNING next_commit_seq"
_RESERVE_CHECKED_RETURNING = f"{_RESERVE_CHECKED} RETURNING next_commit_seq"


def queues_release(*, counts: dict[int, int]) -> None:
    """Give back room on queues whose messages went: added to this thread's release row of
    each queue (``QueueRelease``), not to the queue's row, so that a get waits neither on
    puts nor on other gets. Locks those release rows, in queue id order."""
    stripe = _stripe()
    for queue_id in sorted(counts):
        if counts[queue_id]:  # nothing reads it back: on PostgreSQL it travels with the next statement
            deferred(
                f"INSERT INTO {RELEASE} (queue_id, stripe, released) VALUES (%s, %s, %s)"
                f" ON CONFLICT (queue_id, stripe) DO UPDATE SET released = {RELEASE}.released + excluded.released",
                [queue_id, stripe, counts[queue_id]],
            )


def queue_releases_fold(*, queue_id: int) -> int:
    """Fold a queue's releases into its ``reserved_depth`` (housekeeping): locks the queue's
    row, then its release rows in stripe order (the order a multi-queue commit takes them
    in), sets them to zero and lowers ``reserved_depth`` by their sum, which it returns. The
    room the queue holds does not change."""
    engine = dialect()
    with cursor() as c:
        c.execute(engine.QUEUE_ROW_LOCKED, [queue_id])
        if c.fetchone() is None:
            return 0
        c.execute(engine.RELEASES_LOCKED, [queue_id])
        total = sum(released for _, released in c.fetchall())
        if total:
            c.execute(f"UPDATE {RELEASE} SET released = 0 WHERE queue_id = %s", [queue_id])
            c.execute(f"UPDATE {QUEUE} SET reserved_depth = reserved_depth - %s WHERE id = %s", [total, queue_id])
    return total


def queues_with_releases() -> list[int]:
    """The queues whose releases are not all folded. No lock."""
    with cursor() as c:
        c.execute(f"SELECT DISTINCT queue_id FROM {RELEASE} WHERE released <> 0 ORDER BY queue_id")
        return [row[0] for row in c.fetchall()]


def queue_reserved(*, queue_id: int) -> int:
    """The room a queue holds: its messages, uncommitted puts included (``reserved_depth``
    less its releases). No lock."""
    with cursor() as c:
        c.execute(f"SELECT reserved_depth - {_RELEASED} FROM {QUEUE} WHERE id = %s", [queue_id, queue_id])
        row = c.fetchone()
    return 0 if row is None else row[0]


def queue_depth_facts(*, queue_id: int) -> tuple[int, str, str]:
    """A full queue's facts for its error: its max depth, its name and its broker's. No lock."""
    with cursor() as c:
        c.execute(
            f"SELECT q.max_depth, q.name, b.name FROM {QUEUE} q JOIN {BROKER} b ON b.id = q.broker_id WHERE q.id = %s",
            [queue_id],
        )
        return c.fetchone()


def queues_lock(*, queue_ids: Iterable[int], even_one: bool = False) -> None:
    """Lock queue rows in id order before a commit or rollback changes several of them
    (PostgreSQL; SQLite's writers are serialised already). A single queue is left to the
    counter ``UPDATE`` that follows (it locks the row before any message row is touched),
    unless ``even_one`` (the caller changes message rows first)."""
    dialect().queues_lock(ids=sorted(set(queue_ids)), even_one=even_one)


# --- put ------------------------------------------------------------------------------------

#: The columns whose values differ from message to message in almost every put: never bound
#: once for all the rows (``put_split``).
_PUT_VARYING = frozenset(PUT_COLUMNS.index(name) for name in ("msg_id", "body"))


def put_split(rows: list[tuple]) -> tuple[tuple[int, ...], list[tuple], list]:
    """The put's ``rows`` (``message_put_values``'s tuples) as ``(varying, columns, shared)``:
    the indexes of the columns whose values differ between rows (the message id and the
    body, and any other that does), every column's values, and the one value of each other
    column. A column whose value every row shares (most of them: the queue, the put time,
    the unit of work, the defaults) is bound once; binding a value cost SQLite's driver
    about 0.2 µs and writing one array element about 0.3 µs in Python: a put of 100
    messages bound 2,400 values, now about 200 (docs/performance.md, "A put's shared
    columns bound once")."""
    count = len(rows)
    columns = list(zip(*rows))
    varying = tuple(i for i, column in enumerate(columns) if i in _PUT_VARYING or column.count(column[0]) != count)
    chosen = set(varying)
    return varying, columns, [column[0] for i, column in enumerate(columns) if i not in chosen]


def put_names(varying: tuple[int, ...]) -> tuple[list[str], str]:
    """The shared columns' names, and every column's name in the order the put's INSERT
    lists them (shared first, then the varying ones)."""
    chosen = set(varying)
    shared = [name for i, name in enumerate(PUT_COLUMNS) if i not in chosen]
    return shared, ", ".join(shared + [PUT_COLUMNS[i] for i in varying])


def messages_insert(*, messages: Sequence[Message]) -> None:
    """Insert put messages in one multi-row statement. On SQLite each instance gets its row
    id (its put sequence); on PostgreSQL the statement is deferred (sent with the step's
    next statement, saving a round trip) and the instances keep no row id. New rows: no
    lock beyond the queue row its reservation holds."""
    adapted: dict = {}  # the messages of one put share their put time (and often their expiry)

    def adapt(value):
        if value is None:
            return None
        key = id(value)
        if key not in adapted:
            adapted[key] = dt_param(value)
        return adapted[key]

    dialect().messages_insert(rows=[message_put_values(m, adapt) for m in messages], messages=messages)


# --- get ------------------------------------------------------------------------------------


def _candidates_where(*, uncommitted_of_others: str | None, commit_ordered: bool, match: dict) -> tuple[str, list]:
    where = [
        "queue_id = %s",
        "get_transaction_id IS NULL",
        "lock_token IS NULL",
        "(expires_at IS NULL OR expires_at > %s)",
    ]
    params: list = []
    if uncommitted_of_others:
        where.append("(put_transaction_id IS NULL OR put_transaction_id <> %s)")
        params.append(uncommitted_of_others)
    elif commit_ordered:
        where.append("commit_seq IS NOT NULL")
    else:
        where.append(put_committed_sql())
    for name in ("msg_id", "correl_id", "group_id"):
        if match.get(name):
            where.append(f"{name} = %s")
            params.append(match[name])
    return " AND ".join(where), params


def _order_by(*, priority_first: bool, commit_ordered: bool, with_uncommitted: bool) -> str:
    fields = ["priority DESC"] if priority_first else []
    if commit_ordered and with_uncommitted:
        fields += ["commit_seq IS NULL", "commit_seq", "id"]  # uncommitted puts after, in put order
    else:
        fields.append("commit_seq" if commit_ordered else "id")
    return ", ".join(fields)


def _choose_sql(
    *,
    queue_id: int,
    now,
    limit: int,
    priority_first: bool,
    commit_ordered: bool,
    uncommitted_of_others: str | None,
    match: dict,
    columns: str = "id",
) -> tuple[str, list]:
    """The ids (or other ``columns``) an unordered get chooses, in delivery order
    (``messages_take``, ``messages_lock``); PostgreSQL: ``FOR UPDATE SKIP LOCKED``. Returns the
    statement and its parameters."""
    where, extra = _candidates_where(
        uncommitted_of_others=uncommitted_of_others, commit_ordered=commit_ordered, match=match
    )
    order = _order_by(
        priority_first=priority_first, commit_ordered=commit_ordered, with_uncommitted=bool(uncommitted_of_others)
    )
    choose = f"SELECT {columns} FROM {MESSAGE} WHERE {where} ORDER BY {order} LIMIT %s{dialect().CHOOSE_LOCKS}"
    return choose, [queue_id, dt_param(now), *extra, limit]


def messages_take(
    *,
    queue_id: int,
    now,
    limit: int,
    get_transaction_id: str | None,
    priority_first: bool,
    commit_ordered: bool,
    uncommitted_of_others: str | None,
    match: dict,
) -> list[Message]:
    """An unordered destructive get in one statement: choose up to ``limit`` messages in
    delivery order and, under a unit of work, mark them gotten by it (delivery count + 1),
    or else delete them. Returns them in delivery order.

    PostgreSQL: the chosen rows are locked with ``FOR UPDATE SKIP LOCKED``, so competing
    consumers take different messages, and the outer statement reaches them by their places
    (``_CHOSEN_ROWS``). SQLite: the write lock is held already; the outer statement
    re-checks that each is still free."""
    choice = {
        "queue_id": queue_id,
        "now": now,
        "limit": limit,
        "priority_first": priority_first,
        "commit_ordered": commit_ordered,
        "uncommitted_of_others": uncommitted_of_others,
        "match": match,
    }
    return dialect().messages_take(get_transaction_id=get_transaction_id, **choice)


def _gotten(row: tuple, get_transaction_id: str) -> list:
    """A row as ``_TAKE_UPDATE`` leaves it."""
    values = list(row)
    values[_GET_TXN_AT] = get_transaction_id
    values[_DELIVERY_COUNT_AT] += 1
    return values


def queue_next_release(*, queue_id: int, now):
    """When, after ``now``, a message of the queue next becomes available with no commit to
    announce it (a waiting get looks again then): the earliest end of a peek-lock on one of
    its messages, or of the deadline of an open unit of work holding one. None if neither.
    One read, no lock; the peek-locks through the lock-expiry index (``+queue_id``, as the
    get's own look for lapsed locks)."""
    states = ", ".join(["%s"] * len(OPEN_STATES))
    at = dt_param(now)
    with cursor() as c:
        c.execute(
            f"SELECT MIN(ends.at) FROM (SELECT MIN(locked_until) AS at FROM {MESSAGE}"
            f" WHERE lock_token IS NOT NULL AND locked_until > %s AND +queue_id = %s AND get_transaction_id IS NULL"
            f" UNION ALL SELECT MIN(deadline_at) AS at FROM {TRANSACTION} WHERE id IN (SELECT get_transaction_id"
            f" FROM {MESSAGE} WHERE queue_id = %s AND get_transaction_id IS NOT NULL)"
            f" AND state IN ({states}) AND deadline_at > %s) ends",
            [at, queue_id, queue_id, *OPEN_STATES, at],
        )
        row = c.fetchone()
    return None if row is None or row[0] is None else _datetime(row[0])


def _taken_in_order(rows, *, priority_first: bool, commit_ordered: bool) -> list[Message]:
    messages = [message_from_row(row) for row in rows]
    messages.sort(key=_sort_key(priority_first=priority_first, commit_ordered=commit_ordered))  # RETURNING: no order
    return messages


def messages_lock(
    *,
    queue_id: int,
    now,
    limit: int,
    locked_until,
    priority_first: bool,
    commit_ordered: bool,
    uncommitted_of_others: str | None,
    match: dict,
) -> list[Message]:
    """An unordered peek-lock get in one statement: choose up to ``limit`` messages in
    delivery order, as ``messages_take`` does, and lock each for its holder: a new random
    lock token (16 random bytes as hex, from the database's own generator), ``locked_until``
    and delivery count + 1. Returns them in delivery order. Locks as ``messages_take``."""
    rows = dialect().messages_lock(
        locked_until=dt_param(locked_until),
        queue_id=queue_id,
        now=now,
        limit=limit,
        priority_first=priority_first,
        commit_ordered=commit_ordered,
        uncommitted_of_others=uncommitted_of_others,
        match=match,
    )
    messages = [message_from_row(row) for row in rows]
    messages.sort(key=_sort_key(priority_first=priority_first, commit_ordered=commit_ordered))
    return messages


def messages_by_lock_tokens(*, tokens: Sequence[str], lock: bool) -> list[tuple[Message, int | None, str, str]]:
    """The messages locked with these tokens, each with the definitions version and its
    broker's and queue's names (to find the queue in the definitions cache), in one
    statement; a token no message holds is left out. ``lock``: PostgreSQL ``FOR UPDATE`` of
    the message rows (only once the caller holds its unit of work's row, if any: lock
    order)."""
    rows = _by_lock_tokens(_BY_LOCK_TOKENS_LIST, tokens=tokens, lock=lock)
    n = len(MESSAGE_COLUMNS)
    return [(message_from_row(row[:n]), row[n], row[n + 1], row[n + 2]) for row in rows]


_BY_LOCK_TOKENS_LIST = _read_list(prefix="m.")


def _by_lock_tokens(columns: str, *, tokens: Sequence[str], lock: bool) -> list[tuple]:
    """The rows of the messages locked with these tokens: ``columns`` of the message, then
    the definitions version, the broker's name and the queue's; ``FOR UPDATE`` of the
    message rows on PostgreSQL when ``lock``."""
    if not tokens:
        return []
    marks = ", ".join(["%s"] * len(tokens))
    suffix = dialect().BY_LOCK_TOKENS_LOCKS if lock else ""
    with cursor() as c:
        c.execute(
            f"SELECT {columns}, (SELECT version FROM {VERSION} WHERE id = 1), b.name, q.name FROM {MESSAGE} m"
            f" JOIN {QUEUE} q ON q.id = m.queue_id JOIN {BROKER} b ON b.id = q.broker_id"
            f" WHERE m.lock_token IN ({marks}){suffix}",
            list(tokens),
        )
        return c.fetchall()


@dataclass(slots=True)
class LockedMessage:
    """What completing a peek-lock reads of a message (``locks_to_complete``): not the whole
    row (no body, no properties), so a completion of 100 builds no model instances."""

    pk: int
    msg_id: str
    lock_token: str
    get_transaction_id: str | None
    locked_until: datetime | None
    put_time: datetime
    queue: Queue | None = None  # the caller's, from the definitions cache


def locks_to_complete(*, tokens: Sequence[str], lock: bool) -> list[tuple[LockedMessage, int | None, str, str]]:
    """``messages_by_lock_tokens`` for a completion: each message locked with one of these
    tokens as a ``LockedMessage``, with the definitions version and its broker's and
    queue's names, in one statement; a token no message holds is left out. ``lock``:
    PostgreSQL ``FOR UPDATE`` of the message rows, as there."""
    columns = "m.id, m.msg_id, m.lock_token, m.get_transaction_id, m.locked_until, m.put_time"
    rows = _by_lock_tokens(columns, tokens=tokens, lock=lock)
    return [
        (LockedMessage(pk, msg_id, token, get_txn, _datetime(until), _datetime(put)), version, broker, queue)
        for pk, msg_id, token, get_txn, until, put, version, broker, queue in rows
    ]


def _datetime(value):
    """A datetime column's value as an aware datetime (SQLite may hand back its text: naive
    UTC, as Django and ``dt_param`` write it)."""
    if isinstance(value, str):
        if len(value) == 19 or (len(value) == 26 and value[19] == "." and value[20:].isdigit()):
            # YYYY-MM-DD HH:MM:SS[.ffffff] in one call: 0.2 µs against 1.7 through parse_datetime and aware
            return datetime.fromisoformat(value + "+00:00")
        from django.utils.dateparse import parse_datetime

        value = parse_datetime(value)
    return aware(value)


def message_by_lock_token(*, token: str, lock: bool) -> tuple[Message, int | None, str, str] | None:
    """The message locked with ``token`` (``messages_by_lock_tokens`` of one), or None."""
    found = messages_by_lock_tokens(tokens=[token], lock=lock)
    return found[0] if found else None


def messages_get_transaction_set(*, message_ids: Sequence[int], transaction_id: str) -> None:
    """Completed peek-locks under a unit of work: the messages go when it commits. The
    caller holds their rows."""
    marks = ", ".join(["%s"] * len(message_ids))
    deferred(f"UPDATE {MESSAGE} SET get_transaction_id = %s WHERE id IN ({marks})", [transaction_id, *message_ids])


def message_delete(*, message_id: int) -> None:
    """Remove one message whose row the caller holds (a completed peek-lock)."""
    deferred(f"DELETE FROM {MESSAGE} WHERE id = %s", [message_id])


def messages_delete(*, message_ids: Sequence[int]) -> None:
    """Remove messages whose rows the caller holds (completed peek-locks)."""
    marks = ", ".join(["%s"] * len(message_ids))
    deferred(f"DELETE FROM {MESSAGE} WHERE id IN ({marks})", list(message_ids))


def _sort_key(*, priority_first: bool, commit_ordered: bool):
    def key(m: Message):
        seq = (m.commit_seq is None, m.commit_seq or 0, m.id) if commit_ordered else (m.id,)
        return ((-m.priority,) if priority_first else ()) + seq

    return key


def messages_locks_lapse(*, queue_id: int, now) -> list[tuple[int, int]]:
    """Release the queue's peek-locks that ran out by ``now`` (a get found some: ``get_start``
    said ``lapsed``): each lock's token becomes the message's lapsed token (its holder then
    hears lock_lost), the delivery count stays. Returns ``(id, delivery_count)`` of each
    message released; the caller moves those past the delivery limit to the dead-letter
    queue. Locks those message rows; on PostgreSQL ``FOR UPDATE SKIP LOCKED`` in a
    materialised CTE, so a concurrent get releasing the same locks, or a holder settling
    one, is never waited for (the row is theirs to settle)."""
    return sorted(dialect().messages_locks_lapse(queue_id=queue_id, now=dt_param(now)))


def messages_sendable_lengths(*, queue_id: int, preemptive: bool, priority_first: bool, limit: int) -> list[int]:
    """A channel's look at its transmission queue (brokers/channels/sender.py, at every
    wake-up while it gathers a batch or waits): the body lengths of the next ``limit``
    messages it may get, in delivery order (priority first if the queue says so, then put
    order) — not gotten, not locked, and committed unless the channel is pre-emptive. A
    read: takes no lock (the get that follows takes the messages)."""
    committed = "" if preemptive else f" AND {put_committed_sql()}"
    order = "priority DESC, id" if priority_first else "id"
    with cursor() as c:
        c.execute(
            f"SELECT length(body) FROM {MESSAGE} WHERE queue_id = %s AND get_transaction_id IS NULL"
            f" AND lock_token IS NULL{committed} ORDER BY {order} LIMIT %s",
            [queue_id, limit],
        )
        return [row[0] for row in c.fetchall()]


def messages_upstream_pending(*, queue_id: int, transaction_ids: Sequence[str]) -> bool:
    """A pre-emptive channel's look while it gathers a batch (brokers/channels/sender.py,
    ``_nothing_more_coming``): whether one of ``transaction_ids`` (the units of work that put
    the messages gathered) has not committed, or an open unit of work has put a message on the
    queue that is not gotten yet (through the queue's not-gotten index, each message's unit of
    work by its key). A read: takes no lock. Asked at every wake-up of a gather, as
    ``messages_sendable_lengths`` is."""
    units = ""
    if transaction_ids:
        marks = ", ".join(["%s"] * len(transaction_ids))
        units = f"EXISTS (SELECT 1 FROM {TRANSACTION} WHERE id IN ({marks}) AND state <> 'committed') OR "
    with cursor() as c:
        c.execute(
            f"SELECT {units}EXISTS (SELECT 1 FROM {MESSAGE} m JOIN {TRANSACTION} pt ON pt.id = m.put_transaction_id"
            f" WHERE m.queue_id = %s AND m.get_transaction_id IS NULL AND pt.state IN ({_OPEN}))",
            [*transaction_ids, queue_id],
        )
        return bool(c.fetchone()[0])


#: A channel's receiving end: the batches it holds (above ``last_committed_seq``), each with
#: its stand-in's state (NULL: the stand-in has no row), in order of seq. No lock: the caller
#: holds the receipt's row, and only a holder of it adds or drops a batch.
_RECEIVED_BATCHES = (
    f"SELECT rb.id, rb.seq, rb.standin, t.state FROM {RECEIVED} rb LEFT JOIN {TRANSACTION} t ON t.id = rb.standin"
    " WHERE rb.receipt_id = %s ORDER BY rb.seq"
)
#: The same for one batch.
_RECEIVED_BATCH = (
    f"SELECT rb.id, rb.seq, rb.standin, t.state FROM {RECEIVED} rb LEFT JOIN {TRANSACTION} t ON t.id = rb.standin"
    " WHERE rb.receipt_id = %s AND rb.seq = %s"
)


def received_batches(*, receipt_id: int, seq: int | None = None) -> list[tuple[int, int, str, str | None]]:
    """The batches a channel's receiving end holds (``seq``: that one, if held): row id,
    seq, stand-in and the stand-in's state (None when it has no row), in order of seq."""
    with cursor() as c:
        if seq is None:
            c.execute(_RECEIVED_BATCHES, [receipt_id])
        else:
            c.execute(_RECEIVED_BATCH, [receipt_id, seq])
        return [tuple(row) for row in c.fetchall()]


# --- commit and rollback --------------------------------------------------------------------


def transaction_messages(*, transaction_ids: Sequence[str]) -> tuple[dict[int, tuple[int, int, bool]], dict[int, int]]:
    """What these units of work did to messages: per queue, the lowest and highest row id of
    their uncommitted puts not also gotten inside the group and whether the queue is read in
    commit order, and per queue the number of messages they got. Reads through the partial
    indexes on the put and get transaction; takes no lock (the transaction rows held by the
    caller keep these rows still, and a queue holding messages keeps its read order). SQLite's
    commit (``brokers.dialects.sqlite.messages_commit``); PostgreSQL's function reads the same."""
    marks = ", ".join(["%s"] * len(transaction_ids))
    ids = list(transaction_ids)
    with cursor() as c:
        c.execute(
            f"SELECT 1, m.queue_id, MIN(m.id), MAX(m.id), (SELECT q.read_order FROM {QUEUE} q WHERE q.id = m.queue_id)"
            f" FROM {MESSAGE} m WHERE m.put_transaction_id IN ({marks})"
            f" AND (m.get_transaction_id IS NULL OR m.get_transaction_id NOT IN ({marks})) GROUP BY m.queue_id"
            f" UNION ALL SELECT 2, queue_id, COUNT(*), 0, '' FROM {MESSAGE} WHERE get_transaction_id IN ({marks})"
            f" GROUP BY queue_id",
            ids + ids + ids,
        )
        rows = c.fetchall()
    puts = {queue_id: (low, high, order == "commit") for side, queue_id, low, high, order in rows if side == 1}
    gets = {queue_id: count for side, queue_id, count, _, _ in rows if side == 2}
    return puts, gets


def messages_commit_puts(*, transaction_ids: Sequence[str], queue_id: int, first_id: int, base_seq: int) -> None:
    """Give a commit-ordered queue's committed puts their commit sequences in put order
    (``id - first_id + base_seq``), which the commit-order indexes read, and clear their
    unit of work with them. A put-ordered queue's messages are not written at all: their
    unit of work's committed state makes them available (``put_committed_sql``). Locks those
    message rows."""
    marks = ", ".join(["%s"] * len(transaction_ids))
    ids = list(transaction_ids)
    deferred(  # nothing reads it back: on PostgreSQL it travels with the next statement
        f"UPDATE {MESSAGE} SET put_transaction_id = NULL, commit_seq = id - %s + %s"
        f" WHERE queue_id = %s AND put_transaction_id IN ({marks})"
        f" AND (get_transaction_id IS NULL OR get_transaction_id NOT IN ({marks}))",
        [first_id, base_seq, queue_id, *ids, *ids],
    )


def messages_delete_gotten(*, transaction_ids: Sequence[str]) -> None:
    """Remove the messages these units of work got (a message also put inside the group
    goes without ever having been available). Locks those rows."""
    marks = ", ".join(["%s"] * len(transaction_ids))
    deferred(f"DELETE FROM {MESSAGE} WHERE get_transaction_id IN ({marks})", list(transaction_ids))


# --- rows -----------------------------------------------------------------------------------

_INDEX = {name: i for i, name in enumerate(MESSAGE_COLUMNS)}
_ID_AT, _GET_TXN_AT, _DELIVERY_COUNT_AT = _INDEX["id"], _INDEX["get_transaction_id"], _INDEX["delivery_count"]


def message_from_row(row: Sequence) -> Message:
    """A message model instance from a row in ``MESSAGE_COLUMNS`` order, without the ORM's
    per-field converters (only the JSON, datetime, boolean and bytes columns need one): the
    row's dict made first, its few such columns then set by name."""
    v = dict(zip(MESSAGE_COLUMNS, row))
    for name in _JSON_NAMES:
        value = v[name]
        if value.__class__ is str:
            v[name] = [] if value == "[]" else {} if value == "{}" else json.loads(value)
    for name in _DATETIME_NAMES:
        value = v[name]
        if value is not None:
            v[name] = _datetime(value)
    v["persistent"] = bool(v["persistent"])
    body = v["body"]
    if body.__class__ is memoryview:
        v["body"] = body.tobytes()
    return model_instance(Message, v)


_JSON_NAMES = tuple(name for name in MESSAGE_COLUMNS if name in _JSON_COLUMNS)
_DATETIME_NAMES = tuple(name for name in MESSAGE_COLUMNS if name in _DATETIME_COLUMNS)


def transaction_counts(*, transaction_id: str) -> tuple[dict[int, int], dict[int, int]]:
    """Per queue, how many messages a unit of work put (uncommitted) and got. No lock."""
    with cursor() as c:
        c.execute(
            f"SELECT queue_id, COUNT(*) FROM {MESSAGE} WHERE put_transaction_id = %s GROUP BY queue_id",
            [transaction_id],
        )
        puts = dict(c.fetchall())
        c.execute(
            f"SELECT queue_id, COUNT(*) FROM {MESSAGE} WHERE get_transaction_id = %s GROUP BY queue_id",
            [transaction_id],
        )
        gets = dict(c.fetchall())
    return puts, gets


def messages_delete_put(*, transaction_id: str) -> None:
    """Remove a rolled-back unit of work's puts. Locks those rows."""
    with cursor() as c:
        c.execute(f"DELETE FROM {MESSAGE} WHERE put_transaction_id = %s", [transaction_id])


# --- duplicate detection (dedup keys) -----------------------------------------------------------


def dedup_keys_claim(*, queue_id: int, keys: Sequence[tuple[str, str, str | None, object]], now) -> set[str]:
    """Take the keys (``(key, msg_id, put_transaction_id, expires_at)``: the message put with
    it, under that unit of work if any, remembered until ``expires_at`` if not None; keys
    distinct) that no earlier put on the queue holds, in one ``INSERT … ON CONFLICT DO
    UPDATE … WHERE RETURNING``: a key whose retention ended by ``now`` is taken over as if
    new (whether housekeeping has swept it yet or not); return the keys taken. Caller holds
    the queue's row lock (``queues_lock(even_one=True)``: lock order queue row → key
    entries), so two puts on one queue claim in turn. On PostgreSQL the insert also locks
    each new key's unique-index entry (and the row of a key taken over) until the database
    transaction ends: a concurrent claimer of the same key (not possible under the queue
    lock, but safe anyway) waits, then finds it taken if this transaction commits."""
    if not keys:
        return set()
    t = dt_param(now)
    params: list = []
    for key, msg_id, transaction_id, expires_at in keys:
        params.extend((queue_id, key, msg_id, transaction_id or "", t, dt_param(expires_at)))
    with cursor() as c:
        c.execute(
            f"INSERT INTO {DEDUP} (queue_id, key, msg_id, transaction_id, created_at, expires_at)"
            f" VALUES {', '.join(['(%s, %s, %s, %s, %s, %s)'] * len(keys))}"
            " ON CONFLICT (queue_id, key) DO UPDATE SET msg_id = excluded.msg_id,"
            " transaction_id = excluded.transaction_id, created_at = excluded.created_at,"
            f" expires_at = excluded.expires_at WHERE {DEDUP}.expires_at <= %s RETURNING key",
            [*params, t],
        )
        return {row[0] for row in c.fetchall()}


def dedup_keys_owners(*, queue_id: int, keys: Sequence[str]) -> dict[str, str]:
    """The msg_id each of ``keys`` was first put with on the queue. No lock."""
    with cursor() as c:
        c.execute(
            f"SELECT key, msg_id FROM {DEDUP} WHERE queue_id = %s AND key IN ({', '.join(['%s'] * len(keys))})",
            [queue_id, *keys],
        )
        return dict(c.fetchall())


def dedup_keys_forget(*, now, limit: int) -> int:
    """Delete up to ``limit`` keys whose retention ended by ``now`` (housekeeping), oldest
    first through the expiry index; returns how many. Locks those rows."""
    with cursor() as c:
        c.execute(
            f"DELETE FROM {DEDUP} WHERE id IN (SELECT id FROM {DEDUP} WHERE expires_at <= %s"
            f" ORDER BY expires_at LIMIT %s)",
            [dt_param(now), limit],
        )
        return c.rowcount


def dedup_keys_release(*, transaction_id: str) -> None:
    """Free the keys a rolled-back unit of work took (its puts vanished). Locks those rows."""
    with cursor() as c:
        c.execute(f"DELETE FROM {DEDUP} WHERE transaction_id = %s", [transaction_id])


# --- message instances without the ORM's per-field work ---------------------------------------

_DEFAULTS = {f.attname: (f.get_default() if f.has_default() else None) for f in Message._meta.concrete_fields}
_DEFAULTS.update(
    id=None,
    report=None,
    properties=None,
    format="",
    reply_to_queue="",
    reply_to_broker="",
    put_application="",
    dead_letter_reason="",
    dead_letter_queue="",
    feedback="",
)


def messages_new(
    *,
    queue,
    inputs: Sequence,
    msg_ids: Sequence[str],
    priorities: Sequence[int],
    persistent: Sequence[bool],
    expires: Sequence,
    put_time,
    put_application: str,
    transmission_header,
    put_transaction_ids: Sequence[str | None],
) -> list[Message]:
    """The messages of one put (``messages_insert`` writes them), from validated inputs and,
    per message, its id, priority, persistence, expiry and unit of work. What the put's
    messages share is written once, into the values each one starts from."""
    shared = {
        **_DEFAULTS,
        "queue_id": queue.id,
        "put_time": put_time,
        "put_application": put_application,
        "backout_count": 0,
        "delivery_count": 0,
        "transmission_header": transmission_header,
        "get_transaction_id": None,
    }
    cache = {"queue": queue}
    return [
        model_instance(
            Message,
            {
                **shared,
                "msg_id": msg_id,
                "correl_id": msg.correl_id,
                "group_id": msg.group_id,
                "msg_type": msg.msg_type,
                "priority": priority,
                "persistent": pers,
                "expires_at": expires_at,
                "format": msg.format,
                "reply_to_queue": msg.reply_to_queue,
                "reply_to_broker": msg.reply_to_broker,
                "report": msg.report,
                "properties": msg.properties,
                "body": msg.body,
                "put_transaction_id": unit,
            },
            cache,
        )
        for msg, msg_id, priority, pers, expires_at, unit in zip(
            inputs, msg_ids, priorities, persistent, expires, put_transaction_ids
        )
    ]


def message_put_values(m: Message, adapt=dt_param) -> tuple:
    """The row ``messages_insert`` writes for a message, in ``PUT_COLUMNS`` order. Read from
    the instance's ``__dict__``: a foreign key's id is a data descriptor on the class, a
    call per read (a put of 100 read them hundreds of times)."""
    v = m.__dict__
    report, properties, header = v["report"], v["properties"], v["transmission_header"]
    return (
        v["queue_id"],
        v["msg_id"],
        v["correl_id"],
        v["group_id"],
        v["msg_type"],
        v["priority"],
        v["persistent"],
        adapt(v["expires_at"]),
        v["format"],
        v["reply_to_queue"],
        v["reply_to_broker"],
        json_text(report) if report else "[]",
        json_text(properties) if properties else "{}",
        adapt(v["put_time"]),
        v["put_application"],
        v["backout_count"],
        v["delivery_count"],
        v["dead_letter_reason"],
        v["dead_letter_queue"],
        None if header is None else json_text(header),
        v["body"],
        v["commit_seq"],
        v["put_transaction_id"],
        v["feedback"],
    )


def queues_backout_info(*, queue_ids: Iterable[int]) -> dict[int, tuple[str, str, int]]:
    """Per queue: its name, its broker's name and its backout threshold. No lock."""
    ids = sorted(set(queue_ids))
    marks = ", ".join(["%s"] * len(ids))
    with cursor() as c:
        c.execute(
            f"SELECT q.id, q.name, b.name, q.backout_threshold FROM {QUEUE} q JOIN {BROKER} b"
            f" ON b.id = q.broker_id WHERE q.id IN ({marks})",
            ids,
        )
        return {queue_id: (name, broker, threshold) for queue_id, name, broker, threshold in c.fetchall()}


def messages_restore(*, transaction_id: str) -> list[tuple[int, str, int, bool]]:
    """A rolled-back unit of work's gets return: available again, backout count + 1 — except
    a peek-locked message completed under it, which keeps its lock and its count. Returns
    ``(queue_id, msg_id, backout_count, backed_out)`` in put order. Locks those rows."""
    with cursor() as c:
        c.execute(
            f"UPDATE {MESSAGE} SET get_transaction_id = NULL,"
            f" backout_count = backout_count + CASE WHEN lock_token IS NULL THEN 1 ELSE 0 END"
            # the column itself, not ``lock_token IS NULL``: SQLite 3.40 answers that expression
            # wrongly in RETURNING on this table (tests/brokers/test_backout.py)
            f" WHERE get_transaction_id = %s RETURNING id, queue_id, msg_id, backout_count, lock_token",
            [transaction_id],
        )
        rows = sorted(c.fetchall())
    return [
        (queue_id, msg_id, backout_count, lock_token is None) for _, queue_id, msg_id, backout_count, lock_token in rows
    ]


def messages_take_chosen(*, ids: list[int], get_transaction_id: str | None) -> bool:
    """Take messages an ordered get chose (without locks): mark them gotten by the unit of
    work (delivery count + 1), or delete them for a final get — all of them, or none when
    one was taken meanwhile (False; the caller undoes its database transaction). Locks
    those rows."""
    marks = ", ".join(["%s"] * len(ids))
    free = f"id IN ({marks}) AND get_transaction_id IS NULL AND lock_token IS NULL"
    with cursor() as c:
        if get_transaction_id is not None:
            c.execute(
                f"UPDATE {MESSAGE} SET get_transaction_id = %s, delivery_count = delivery_count + 1 WHERE {free}",
                [get_transaction_id, *ids],
            )
        else:
            c.execute(f"DELETE FROM {MESSAGE} WHERE {free}", ids)
        return c.rowcount == len(ids)

"""SQLite's message and queue statements (``brokers.dialects``). Every writer holds the
database's write lock from ``BEGIN IMMEDIATE`` (transactions/durability.py): no statement
here takes a row lock, and a write that names rows chosen by an earlier statement of the
step re-checks that each is still free."""

from __future__ import annotations

from typing import Sequence

from transactions.queries import cursor

from ..queries import (
    _GET_START_NAMED,
    _ID_AT,
    _RESERVE,
    _RESERVE_CHECKED,
    _RETURNING_LIST,
    _ROW_AND_VERSION,
    _SQLITE_READ_LIST,
    MESSAGE,
    PUT_COLUMNS,
    QUEUE,
    RELEASE,
    _choose_sql,
    _gotten,
    _taken_in_order,
    put_names,
    put_split,
)

#: Locks: none (the write lock is held).
GET_START_NAMED = _GET_START_NAMED
#: A put's first statement under a named unit of work: its row and the definitions version.
#: Locks: none (the write lock is held).
ROW_AND_VERSION = _ROW_AND_VERSION
#: One release row per queue: writers are serialised already.
RELEASE_STRIPES = 1
#: Locks: none (the write lock is held).
QUEUE_ROW_LOCKED = f"SELECT id FROM {QUEUE} WHERE id = %s"
#: Locks: none (the write lock is held).
RELEASES_LOCKED = f"SELECT stripe, released FROM {RELEASE} WHERE queue_id = %s ORDER BY stripe"
CHOOSE_LOCKS = ""
BY_LOCK_TOKENS_LOCKS = ""

#: The counter a reservation handed out (no ``RETURNING``: dearer than this second
#: statement). Locks: none (the write lock is held).
NEXT_COMMIT_SEQ = f"SELECT next_commit_seq FROM {QUEUE} WHERE id = %s"

#: A take's write of the chosen rows (``{ids}``: their ids), each re-checked still free.
TAKE_UPDATE = (
    f"UPDATE {MESSAGE} SET get_transaction_id = %s, delivery_count = delivery_count + 1"
    " WHERE id IN ({ids}) AND get_transaction_id IS NULL AND lock_token IS NULL"
)
TAKE_DELETE = f"DELETE FROM {MESSAGE} WHERE id IN ({{ids}}) AND get_transaction_id IS NULL AND lock_token IS NULL"

#: A peek-lock of the chosen rows (``{choose}``: the choice), each re-checked still free:
#: a new random token, the lock's end, delivery count + 1.
LOCK_CHOSEN = (
    f"UPDATE {MESSAGE} SET lock_token = lower(hex(randomblob(16))), locked_until = %s,"
    " delivery_count = delivery_count + 1 WHERE id IN ({choose})"
    f" AND get_transaction_id IS NULL AND lock_token IS NULL RETURNING {_RETURNING_LIST}"
)

#: The queue's peek-locks that ran out: released, each token kept as the lapsed one.
LOCKS_LAPSE = (
    f"UPDATE {MESSAGE} SET lapsed_lock_token = lock_token, lock_token = NULL, locked_until = NULL"
    " WHERE lock_token IS NOT NULL AND locked_until <= %s AND queue_id = %s AND get_transaction_id IS NULL"
    " RETURNING id, delivery_count"
)


def queue_reserve(*, queue_id: int, count: int, commit_count: int, max_depth_checked: bool) -> int | None:
    with cursor() as c:
        if max_depth_checked:
            c.execute(_RESERVE_CHECKED, [count, commit_count, queue_id, count, queue_id])
        else:
            c.execute(_RESERVE, [count, commit_count, queue_id])
        if c.rowcount != 1:
            return None
        if not commit_count:
            return 0  # no commit sequence handed out
        c.execute(NEXT_COMMIT_SEQ, [queue_id])
        return c.fetchone()[0] - commit_count


def queues_lock(*, ids: list[int], even_one: bool) -> None:
    """Nothing: the write lock serialises every writer."""


def ordered_getters_lock(*, queue_id: int) -> None:
    """Nothing: the write lock serialises every writer."""


_put_statements: dict[tuple[tuple[int, ...], int], str] = {}


def _put_statement(varying: tuple[int, ...], count: int) -> str:
    """The put's INSERT: the shared columns bound once in the ``SELECT`` list, the varying
    ones from a ``VALUES`` list of ``count`` rows; made once per shape. No ``RETURNING`` (it
    cost SQLite about 25,000 instructions a statement and 19,000 a row): the rows' ids are
    the cursor's ``lastrowid`` and the ones before it."""
    key = (varying, count)
    sql = _put_statements.get(key)
    if sql is None:
        shared, names = put_names(varying)
        one = "(" + ", ".join(["%s"] * len(varying)) + ")"
        selected = ", ".join(["%s"] * len(shared) + [f"column{n}" for n in range(1, len(varying) + 1)])
        sql = f"INSERT INTO {MESSAGE} ({names}) SELECT {selected} FROM (VALUES {', '.join([one] * count)})"
        if len(_put_statements) < 1024:
            _put_statements[key] = sql
    return sql


#: The put's INSERT of one message: every column bound. New row.
PUT_ONE = f"INSERT INTO {MESSAGE} ({', '.join(PUT_COLUMNS)}) VALUES ({', '.join(['%s'] * len(PUT_COLUMNS))})"


def messages_insert(*, rows: list[tuple], messages: Sequence) -> None:
    """Each instance gets its row id (its put sequence). New rows."""
    if len(rows) == 1:
        sql, params = PUT_ONE, list(rows[0])
    else:
        varying, columns, params = put_split(rows)
        sql = _put_statement(varying, len(rows))
        for row in zip(*(columns[i] for i in varying)):
            params.extend(row)
    with cursor() as c:
        c.execute(sql, params)
        last = c.lastrowid
    # SQLite gives each new row of an AUTOINCREMENT table the largest id it has ever held
    # plus one, row after row of the VALUES list: the statement's ids are consecutive
    # (tests/brokers/test_put_values.py checks them against the table).
    for pk, m in enumerate(messages, start=last - len(messages) + 1):
        m.id = pk


_takes_by_id: dict[tuple[str, int], str] = {}


def _take_by_id(template: str, slots: int) -> str:
    """``TAKE_UPDATE`` or ``TAKE_DELETE`` with ``slots`` ids, made once per size."""
    sql = _takes_by_id.get((template, slots))
    if sql is None:
        sql = _takes_by_id[(template, slots)] = template.format(ids=", ".join(["%s"] * slots))
    return sql


def messages_take(*, get_transaction_id: str | None, priority_first: bool, commit_ordered: bool, **choice) -> list:
    """The chosen rows read whole, then marked gotten or deleted by id (the write lock is
    held between the two). ``RETURNING`` cost SQLite more than the second statement: about
    75,000 instructions a get of one message (docs/performance.md, "SQLite's ``RETURNING``")."""
    choose, params = _choose_sql(
        priority_first=priority_first, commit_ordered=commit_ordered, columns=_SQLITE_READ_LIST, **choice
    )
    with cursor() as c:
        c.execute(choose, params)
        rows = c.fetchall()
        if not rows:
            return []
        ids = [row[_ID_AT] for row in rows]
        slots = 1 << (len(ids) - 1).bit_length()  # a power of two: a few statements, each prepared once
        ids += ids[-1:] * (slots - len(ids))
        if get_transaction_id is None:
            c.execute(_take_by_id(TAKE_DELETE, slots), ids)
        else:
            c.execute(_take_by_id(TAKE_UPDATE, slots), [get_transaction_id, *ids])
            rows = [_gotten(row, get_transaction_id) for row in rows]
    return _taken_in_order(rows, priority_first=priority_first, commit_ordered=commit_ordered)


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
    """A put's checks and reservation as named statements, run now (on PostgreSQL one call
    of ``baton_put_v1``): the definitions version, read with the named unit of work's row
    when one is named (``DefinitionsChanged`` unless it is still ``version``); that unit of
    work checked by ``joined(row)`` (the service's rule: its owner, then its state, broker
    and deadline); then, when ``count`` > 0, room for ``count`` messages and
    ``commit_count`` commit sequences reserved on the queue (``QueueFull``). Its answer for
    ``put_answer``. Locks: none (the write lock is held)."""
    from baton_client.errors import QueueFull
    from transactions.exceptions import DefinitionsChanged
    from transactions.queries import transaction_from_row

    from .. import queries

    row = None
    if transaction_id:
        with cursor() as c:
            c.execute(ROW_AND_VERSION, [transaction_id])
            found = c.fetchone()
        if found is not None:
            row, current = transaction_from_row(found[:-1]), found[-1]
    if row is None:
        current = queries.definitions_version()
    if current != version:
        raise DefinitionsChanged
    if transaction_id:
        row = joined(row)
    base = None
    if count > 0:
        base = queue_reserve(queue_id=queue_id, count=count, commit_count=commit_count, max_depth_checked=True)
        if base is None:
            depth, name, owner = queries.queue_depth_facts(queue_id=queue_id)
            raise QueueFull(f"Queue {name!r} is full (max depth {depth}).", broker=owner, queue=name, max_depth=depth)
    return [(base if commit_count else None, row)]


def put_answer(answer: list) -> tuple:
    """``put``'s answer: ``(base, row)``, the first commit sequence handed out (None when
    none) and the named unit of work's row (None when the put named none)."""
    return answer[0]


def definitions_check(*, version: int) -> None:
    """Inside the step, before it writes: the definitions version read (the write lock is
    held), ``DefinitionsChanged`` unless it is still ``version``."""
    from transactions.exceptions import DefinitionsChanged

    from .. import queries

    if queries.definitions_version() != version:
        raise DefinitionsChanged


#: SQLite has no server-side functions: every get is the get's own statements
#: (``brokers.services.messages.get._get_by_statements``).
get_call = None


def messages_lock(*, locked_until, **choice) -> list:
    choose, params = _choose_sql(**choice)
    with cursor() as c:
        c.execute(LOCK_CHOSEN.format(choose=choose), [locked_until, *params])
        return c.fetchall()


def messages_locks_lapse(*, queue_id: int, now) -> list[tuple[int, int]]:
    with cursor() as c:
        c.execute(LOCKS_LAPSE, [now, queue_id])
        return c.fetchall()


def messages_commit(*, transaction_ids: Sequence[str]) -> list[str]:
    """What a group of units of work did to messages made permanent, as named statements:
    what they did read first (``transaction_messages``), a commit-ordered queue's puts
    given commit sequences in put order, the gets' room given back and the gets removed. The
    queues' wake-up keys. Locks: none (the write lock is held)."""
    from .. import queries

    puts, gets = queries.transaction_messages(transaction_ids=transaction_ids)
    for queue_id in sorted(puts):
        first, last, commit_ordered = puts[queue_id]
        if commit_ordered:  # a put-ordered queue: neither its row nor its messages are written
            base = queries.queue_reserve(
                queue_id=queue_id, count=0, commit_count=last - first + 1, max_depth_checked=False
            )
            queries.messages_commit_puts(
                transaction_ids=transaction_ids, queue_id=queue_id, first_id=first, base_seq=base
            )
    if gets:
        queries.queues_release(counts=gets)
        queries.messages_delete_gotten(transaction_ids=transaction_ids)
    return [f"queue:{queue_id}" for queue_id in sorted({*puts, *gets})]


def messages_rollback(*, transaction_id: str, removed: dict[int, int], names: dict, now) -> list[str]:
    """A rolled-back unit of work's puts gone (their room given back) and its gets returned
    (``messages_restore``), each with the journal's backout event; ``removed``: its puts per
    queue, ``names``: the queues of its gets (``queues_backout_info``). The wake-up keys of
    the queues the gets return to. Locks: none (the write lock is held)."""
    from transactions.journal import journal_event, journal_record
    from transactions.models import JournalKind

    from .. import queries

    if removed:
        queries.queues_release(counts=removed)
        queries.messages_delete_put(transaction_id=transaction_id)
    if not names:
        return []
    restored = queries.messages_restore(transaction_id=transaction_id)
    journal_record(
        events=[
            journal_event(
                JournalKind.BACKOUT,
                broker=names[queue_id][1],
                queue=names[queue_id][0],
                transaction_id=transaction_id,
                msg_id=msg_id,
                backout_count=backout_count,
                at=now,
            )
            for queue_id, msg_id, backout_count, backed_out in restored
            if backed_out
        ]
    )
    return sorted({f"queue:{queue_id}" for queue_id, *_ in restored})

"""Put: immediately, or under a unit of work; reactive messages act on earlier ones.

Locking: the unit of work's row (if any), then the destination queue's row (its counters:
``queries.queue_reserve`` on SQLite, ``baton_put_v1`` on PostgreSQL), then inserts. See
docs/concurrency.md. The statements are in ``brokers.queries``, ``brokers.dialects`` and
``transactions.queries``; the function in brokers migration 0022.
"""

from __future__ import annotations

from datetime import timedelta
from functools import partial

from django.conf import settings
from django.utils import timezone

from transactions.durability import engine_step
from transactions.journal import journal_record, journal_step_event
from transactions.exceptions import DefinitionsChanged
from transactions.manager import engine_called, transaction_mark, transaction_timeouts_applied
from transactions.models import JournalKind, Transaction

from ... import permissions as may
from ... import queries
from ...definitions import definitions_checked, definitions_trusted
from ...dialects import dialect
from baton_client.errors import BatonError, MessageTooLarge, QueueFull
from ...ids import ids_new
from ...models import Message, PendingReaction, Persistence, ReadOrder
from ...queries import messages_new
from ..message_input import MessageInput, message_length
from ..reactions import reaction_apply
from ..reports import COA, reports_send
from ..store import (
    MARK_DEDUP,
    MARK_REACTIONS,
    MARK_REPORTS,
    client_sessions_note,
    connection_pending_note,
    queues_woken,
)
from .common import (
    Duplicate,
    PutResult,
    _connection,
    queue_put_target,
    _syncpoint_checked,
    _unit_of_work,
    unit_of_work_joined,
)


def message_put(
    *,
    broker: str,
    queue: str,
    messages: list[MessageInput],
    transaction_id: str | None = None,
    syncpoint: str | None = None,
    connection_id: str | None = None,
    put_application: str = "",
    user=None,
) -> PutResult:
    """Put messages on a queue: under a unit of work (uncommitted until it commits), or
    immediately. With ``syncpoint="if_persistent"`` persistent messages go under a unit of
    work and non-persistent ones immediately. All or none are put: a full queue, a message
    too long or a disabled queue refuses the whole call. A message with ``refers_to`` is a
    reactive message: it acts on an earlier message instead of being queued.

    Duplicate detection: a message with a ``dedup_key`` the queue has already taken (by an
    earlier put, or earlier in this call) is skipped, not refused; the rest are put and
    the skipped ones are listed in the result's ``duplicates``. Keys are taken in the same
    database transaction as the put (``queries.dedup_keys_claim``).

    ``user``: who puts (a transport passes its authenticated user): a unit of work it joins
    must be theirs (docs/permissions.md), one it begins is theirs. None: system code.

    The arguments are valid (a transport parses what a client sends through
    ``MessagePut.Input``; platform code passes what it built): 1 to BATON_MAX_BATCH messages,
    ``syncpoint`` None, yes, no or if_persistent. Checked here: what needs the database."""
    syncpoint = _syncpoint_checked(syncpoint, transaction_id)
    # Only a persistent message put outside a unit of work must be on disk when we answer.
    durable = syncpoint == "no" and any(m.persistence != Persistence.NON_PERSISTENT for m in messages)
    args = {
        "broker": broker,
        "queue": queue,
        "messages": messages,
        "transaction_id": transaction_id,
        "syncpoint": syncpoint,
        "connection_id": connection_id,
        "put_application": put_application,
        "user": user,
    }
    while True:
        with transaction_timeouts_applied():
            try:
                return engine_called(transaction_id, partial(_put_step, args, durable))
            except DefinitionsChanged:
                definitions_checked()  # the cache read again (PostgreSQL): the put again


def _put_step(args: dict, durable: bool) -> PutResult:
    with engine_step(durable=durable):
        return _put(**args)


def _put(
    *,
    broker: str,
    queue: str,
    messages: list[MessageInput],
    transaction_id: str | None,
    syncpoint: str,
    connection_id: str | None,
    put_application: str,
    user,
) -> PutResult:
    """One put in the caller's database transaction: the definitions cache trusted, then the
    checks and the reservation one call of the dialect's ``put`` (PostgreSQL: ``baton_put_v1``,
    sent with the rows; SQLite: named statements), which compares the version (a stale cache
    costs one more try, ``message_put``)."""
    now = timezone.now()  # taken once this database transaction has begun (SQLite: holds the write lock)
    version = definitions_trusted()
    if version is None:  # an empty cache: filled from here on
        definitions_checked()
        version = definitions_trusted()
    try:
        target = queue_put_target(broker=broker, queue=queue)
        named, dest = target.named, target.queue
        owner = dest.broker
        if user is not None:  # context fields, reports, the indirect paths' rule (docs/permissions.md)
            may.require_put_fields(user, broker=broker, messages=messages)
            if named is not dest:
                may.require_reached(user, "put", broker=broker, queue=queue)
        limit = min(
            named.max_message_length,
            dest.max_message_length,
            owner.max_message_length,
            settings.BATON_MAX_MESSAGE_LENGTH,
        )
        for index, msg in enumerate(messages):
            length = message_length(msg)
            if length > limit:
                raise MessageTooLarge(
                    f"Message {index} is {length} bytes (body, properties and descriptor); queue {dest.name!r} "
                    f"accepts at most {limit}.",
                    index=index,
                    length=length,
                    max_message_length=limit,
                )
        conn = _connection(connection_id, owner)
    except BatonError:
        if not definitions_checked():
            raise DefinitionsChanged from None  # said on the strength of a stale cache: again
        raise
    queue_persistent = named.default_persistence == Persistence.PERSISTENT
    persistent = [
        m.persistence == Persistence.PERSISTENT or (m.persistence == "queue_default" and queue_persistent)
        for m in messages
    ]
    under_uow = [syncpoint == "yes" or (syncpoint == "if_persistent" and p) for p in persistent]
    dedup = any(msg.dedup_key for msg in messages)
    # A commit-ordered queue's immediate puts take commit sequences; a put-ordered queue's need
    # none (a get reads it in put order; a queue holding messages keeps its read order).
    sequenced = dest.read_order != ReadOrder.PUT
    # a unit of work begun (PostgreSQL: its INSERT deferred) or the connection's joined first: lock order
    begun = None
    if not transaction_id:
        begun = _unit_of_work(broker=owner, transaction_id=None, wanted=any(under_uow), connection=conn, user=user)
    counted = [uow for uow, msg in zip(under_uow, messages) if msg.refers_to is None]
    d = dialect()
    # duplicates known only once their keys are claimed: such a put reserves after claiming
    answer = d.put(
        version=version,
        transaction_id=transaction_id or None,
        broker=owner.name,
        user=user,
        now=now,
        queue_id=dest.pk,
        count=0 if dedup else len(counted),
        commit_count=0 if dedup or not sequenced else sum(1 for uow in counted if not uow),
        joined=partial(_joined, transaction_id=transaction_id, broker=owner.name, user=user),
    )
    if not transaction_id:
        txn = begun
    elif dedup or conn is not None or any(m.report or m.refers_to is not None for m in messages):
        txn = d.put_answer(answer)[1]  # its row (its marks) read
    else:  # checked (and locked) by the dialect's put; only its id is used
        txn = Transaction(id=transaction_id, broker=owner.name)
    default_priority, unit = named.default_priority, txn.id if txn is not None else None
    rows = messages_new(
        queue=dest,
        inputs=messages,
        msg_ids=ids_new(len(messages)),
        priorities=[default_priority if msg.priority is None else msg.priority for msg in messages],
        persistent=persistent,
        expires=[now + timedelta(milliseconds=msg.expiry_ms) if msg.expiry_ms else None for msg in messages],
        put_time=now,
        put_application=put_application,
        transmission_header=target.header,
        put_transaction_ids=[unit if uow else None for uow in under_uow],
    )
    duplicates: list[Duplicate] = []
    if dedup:
        rows, messages, duplicates = _duplicates_skipped(queue=dest, rows=rows, messages=messages, now=now)
        if txn is not None and any(msg.dedup_key and r.put_transaction_id for r, msg in zip(rows, messages)):
            transaction_mark(transaction=txn, mark=MARK_DEDUP)
    queued = [r for r, msg in zip(rows, messages) if msg.refers_to is None]
    if queued:
        immediate = [r for r in queued if _unit_of(r) is None]
        if not dedup:  # reserved by the dialect's put
            base = d.put_answer(answer)[0] if sequenced and immediate else None
        else:
            base = queries.queue_reserve(
                queue_id=dest.pk, count=len(queued), commit_count=len(immediate), max_depth_checked=True
            )
            if base is None:
                raise QueueFull(
                    f"Queue {dest.name!r} is full (max depth {dest.max_depth}).",
                    broker=owner.name,
                    queue=dest.name,
                    max_depth=dest.max_depth,
                )
        if base is not None:
            for seq, row in enumerate(immediate, start=base):
                row.commit_seq = seq
        # the journal first: on PostgreSQL it travels with the INSERT (queries.deferred)
        journal_record(events=_put_events(queued, broker=owner.name, queue=dest.name, at=now))
        queries.messages_insert(messages=queued)
        # every getter for immediate puts; only pre-emptive ones for uncommitted puts
        queues_woken([dest.pk], uncommitted_puts=not immediate)
        if any(r.report for r in queued):
            reports_send(originals=[r for r in immediate if r.report], feedback=COA)
            if txn is not None and any(r.report for r in queued if r.put_transaction_id is not None):
                transaction_mark(transaction=txn, mark=MARK_REPORTS)
    for row, msg in zip(rows, messages):
        if msg.refers_to is not None:
            _reaction_put(row=row, msg=msg, queue=dest, txn=txn if row.put_transaction_id else None)
    if conn is not None:
        now_put = [r.msg_id for r in queued if r.put_transaction_id is None]
        later_put = [r.msg_id for r in queued if r.put_transaction_id is not None]
        if later_put:
            connection_pending_note(connection=conn, transaction=txn, put=later_put[-1])
        if now_put:
            client_sessions_note(broker_id=owner.pk, put={conn.conn_id: now_put[-1]})
    return PutResult(rows, dest, txn.id if txn else None, duplicates)


def _joined(row: Transaction | None, *, transaction_id: str, broker: str, user) -> Transaction:
    """The named unit of work checked on its row as read by the dialect's put (SQLite)."""
    return unit_of_work_joined(transaction_id=transaction_id, broker=broker, user=user, locked=row)


def _retained_until(msg: MessageInput, now):
    return None if msg.dedup_retention_ms is None else now + timedelta(milliseconds=msg.dedup_retention_ms)


def _duplicates_skipped(*, queue, rows: list[Message], messages: list[MessageInput], now):
    """The rows and messages left once those whose key is taken are removed, and the
    duplicates. Locks the queue's row first (lock order: queue row, then key entries)."""
    queries.queues_lock(queue_ids=[queue.pk], even_one=True)
    first: dict[str, int] = {}
    for index, msg in enumerate(messages):
        if msg.dedup_key:
            first.setdefault(msg.dedup_key, index)
    claimed = queries.dedup_keys_claim(
        queue_id=queue.pk,
        now=now,
        keys=[
            (key, rows[i].msg_id, rows[i].put_transaction_id, _retained_until(messages[i], now))
            for key, i in first.items()
        ],
    )
    skipped = [
        i
        for i, msg in enumerate(messages)
        if msg.dedup_key and (msg.dedup_key not in claimed or first[msg.dedup_key] != i)
    ]
    if not skipped:
        return rows, messages, []
    owners = queries.dedup_keys_owners(queue_id=queue.pk, keys=sorted({messages[i].dedup_key for i in skipped}))
    duplicates = [
        Duplicate(index=i, dedup_key=messages[i].dedup_key, msg_id=owners[messages[i].dedup_key]) for i in skipped
    ]
    gone = set(skipped)
    kept = [i for i in range(len(messages)) if i not in gone]
    return [rows[i] for i in kept], [messages[i] for i in kept], duplicates


def _reaction_put(*, row: Message, msg: MessageInput, queue, txn) -> None:
    """A reactive message: applied now, or when its unit of work commits."""
    reaction = PendingReaction(
        transaction=txn,
        queue=queue,
        msg_id=row.msg_id,
        target_msg_id=msg.refers_to["msg_id"],
        action=msg.refers_to["action"],
        body=row.body,
        priority=msg.priority,
        report=row.report,
        reply_to_queue=row.reply_to_queue,
        reply_to_broker=row.reply_to_broker,
    )
    if txn is None:
        reaction_apply(queue=queue, reaction=reaction)
    else:
        reaction.save()
        transaction_mark(transaction=txn, mark=MARK_REACTIONS)


def _unit_of(row: Message) -> str | None:
    """The unit of work a message is put under, from the instance's ``__dict__``: read as an
    attribute, a foreign key's id goes through a descriptor call (per message, in a put of 100)."""
    return row.__dict__["put_transaction_id"]


def _put_events(rows: list[Message], *, broker: str, queue: str, at) -> list:
    """The journal's put events: one per unit of work the messages went under (one for
    most puts; a put with ``syncpoint="if_persistent"`` may put some under none)."""
    by_unit: dict[str | None, list[dict]] = {}
    for row in rows:
        by_unit.setdefault(_unit_of(row), []).append(
            {"msg_id": row.msg_id, "persistent": row.persistent, "bytes": len(row.body)}
        )
    return [
        journal_step_event(JournalKind.PUT, broker=broker, queue=queue, transaction_id=unit, at=at, messages=messages)
        for unit, messages in by_unit.items()
    ]

"""Put, get and browse.

Locking: a put locks the unit of work's row (if any), then the destination queue's row
(its counters), then inserts. A get locks the unit of work's row (if any), then the
chosen message rows (``SKIP LOCKED`` on PostgreSQL, so competing consumers take different
messages), then, for a final get, the queue's row. On SQLite, IMMEDIATE transactions
serialise all of it.
"""
from __future__ import annotations

import base64
import binascii
import json
import uuid
from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.db import transaction as db
from django.db.models import F, Q
from django.utils import timezone

from transactions.journal import journal_event, journal_record
from transactions.locks import link_graph_lock, link_graph_locking
from transactions.manager import (
    transaction_begin, transaction_commit, transaction_for_operation, transaction_links_add, transaction_timeouts_applied,
)
from transactions.models import JournalKind, Transaction, TransactionState
from transactions.wakeups import wait_for

from ..exceptions import GetInhibited, InvalidInput, MessageTooLarge, OptionsConflict, PutInhibited
from ..ids import ids_new
from ..models import Broker, Connection, Message, Persistence, Queue, QueueKind, ReadOrder
from ..selectors import connection_get, queue_get
from .message_input import HEX_ID, MessageInput
from .ordering import delivery_ordered, is_ordered, not_expired, order_key, ordered_pick
from .store import client_sessions_note, connection_pending_note, queue_release, queue_reserve, queue_wakeup_key, queues_woken

SYNCPOINT_CHOICES = {"yes", "no", "if_persistent"}
GET_MODES = {"destructive", "browse", "peek_lock"}


@dataclass
class PutResult:
    messages: list[Message]
    queue: Queue
    transaction_id: str | None


@dataclass
class GetResult:
    messages: list[Message]
    queue: Queue
    transaction_id: str | None
    reason: str | None = None


@dataclass
class BrowseResult:
    messages: list[Message]
    queue: Queue
    cursor: str


@dataclass
class _Target:
    named: Queue  # the queue the caller named (its defaults apply)
    queue: Queue  # the local queue that receives the messages
    header: dict | None = field(default=None)


def _put_target(*, broker: str, queue: str) -> _Target:
    named = queue_get(broker=broker, name=queue)
    if not named.put_enabled:
        raise PutInhibited(f"Puts are disabled on queue {queue!r}.", broker=broker, queue=queue)
    if named.kind == QueueKind.ALIAS:
        target = queue_get(broker=broker, name=named.target_queue)
        if target.kind != QueueKind.LOCAL:
            raise InvalidInput(f"Alias {queue!r} must name a local queue.", broker=broker, queue=queue)
        if not target.put_enabled:
            raise PutInhibited(f"Puts are disabled on queue {target.name!r}.", broker=broker, queue=target.name)
        return _Target(named, target)
    if named.kind == QueueKind.REMOTE:
        xmitq = queue_get(broker=broker, name=named.transmission_queue)
        if not xmitq.put_enabled:
            raise PutInhibited(f"Puts are disabled on transmission queue {xmitq.name!r}.", broker=broker, queue=xmitq.name)
        return _Target(named, xmitq, {"broker": named.remote_broker, "queue": named.remote_queue})
    return _Target(named, named)


def _get_source(*, broker: str, queue: str) -> Queue:
    named = queue_get(broker=broker, name=queue)
    source = named
    if named.kind == QueueKind.ALIAS:
        source = queue_get(broker=broker, name=named.target_queue)
    if source.kind != QueueKind.LOCAL:
        raise InvalidInput(f"Messages cannot be gotten from {named.kind} queue {queue!r}.", broker=broker, queue=queue)
    if not named.get_enabled or not source.get_enabled:
        raise GetInhibited(f"Gets are disabled on queue {queue!r}.", broker=broker, queue=queue)
    return source


def _unit_of_work(*, broker: Broker, transaction_id: str | None, wanted: bool, connection: Connection | None) -> Transaction | None:
    """The unit of work an operation joins: the one named, else (when a syncpoint is wanted)
    the connection's current one, begun if it has none, else a new one.
    Caller holds an open database transaction."""
    if transaction_id:
        return transaction_for_operation(transaction_id=transaction_id, broker=broker.name)
    if not wanted:
        return None
    if connection is not None:
        current = connection.current_transaction_id
        if current and Transaction.objects.filter(pk=current, state=TransactionState.ACTIVE).exists():
            return transaction_for_operation(transaction_id=current, broker=broker.name)
    txn = transaction_begin(
        broker=broker.name, timeout_ms=broker.transaction_timeout_ms, owner=connection.conn_id if connection else "",
    )
    if connection is not None:
        Connection.objects.filter(pk=connection.pk).update(current_transaction=txn)
    return txn


def _connection(conn_id: str | None, broker: Broker) -> Connection | None:
    if not conn_id:
        return None
    conn = connection_get(conn_id=conn_id)
    if conn.broker_id != broker.pk:
        raise InvalidInput(f"Connection {conn_id} is to broker {conn.broker.name!r}, not {broker.name!r}.", connection=conn_id)
    return conn


def _syncpoint_checked(syncpoint: str | None, transaction_id: str | None) -> str:
    if syncpoint is None:
        return "yes" if transaction_id else "no"
    if syncpoint not in SYNCPOINT_CHOICES:
        raise InvalidInput("syncpoint must be yes, no or if_persistent.", errors={"syncpoint": ["Invalid choice."]})
    if transaction_id and syncpoint == "no":
        raise OptionsConflict("A put or get under a transaction cannot also ask for no syncpoint.")
    return syncpoint


def message_put(
    *, broker: str, queue: str, messages: list[MessageInput], transaction_id: str | None = None,
    syncpoint: str | None = None, connection_id: str | None = None, put_application: str = "",
) -> PutResult:
    """Put messages on a queue: under a unit of work (uncommitted until it commits), or
    immediately. With ``syncpoint="if_persistent"`` persistent messages go under a unit of
    work and non-persistent ones immediately. All or none are put: a full queue, a message
    too long or a disabled queue refuses the whole call."""
    if not messages:
        raise InvalidInput("Give at least one message.", errors={"messages": ["Empty."]})
    if len(messages) > settings.BATON_MAX_BATCH:
        raise InvalidInput(f"At most {settings.BATON_MAX_BATCH} messages a call.", errors={"messages": ["Too many."]})
    syncpoint = _syncpoint_checked(syncpoint, transaction_id)
    now = timezone.now()
    with transaction_timeouts_applied(), db.atomic():
        target = _put_target(broker=broker, queue=queue)
        owner = target.queue.broker
        limit = min(target.named.max_message_length, target.queue.max_message_length, owner.max_message_length,
                    settings.BATON_MAX_MESSAGE_LENGTH)
        for index, msg in enumerate(messages):
            if len(msg.body) > limit:
                raise MessageTooLarge(
                    f"Message {index} is {len(msg.body)} bytes; queue {target.queue.name!r} accepts at most {limit}.",
                    index=index, length=len(msg.body), max_message_length=limit,
                )
        persistent = [
            (m.persistence == Persistence.PERSISTENT)
            or (m.persistence == "queue_default" and target.named.default_persistence == Persistence.PERSISTENT)
            for m in messages
        ]
        under_uow = [syncpoint == "yes" or (syncpoint == "if_persistent" and p) for p in persistent]
        conn = _connection(connection_id, owner)
        txn = _unit_of_work(broker=owner, transaction_id=transaction_id, wanted=any(under_uow), connection=conn)
        immediate = sum(1 for u in under_uow if not u)
        base = queue_reserve(queue=target.queue, count=len(messages), commit_count=immediate)
        rows = []
        msg_ids = ids_new(len(messages))
        for msg, msg_id, pers, uow in zip(messages, msg_ids, persistent, under_uow):
            rows.append(Message(
                queue=target.queue, msg_id=msg_id, correl_id=msg.correl_id, group_id=msg.group_id,
                msg_type=msg.msg_type,
                priority=msg.priority if msg.priority is not None else target.named.default_priority,
                persistent=pers, expires_at=now + timedelta(milliseconds=msg.expiry_ms) if msg.expiry_ms else None,
                format=msg.format, reply_to_queue=msg.reply_to_queue, reply_to_broker=msg.reply_to_broker,
                report=msg.report, properties=msg.properties, put_time=now, put_application=put_application,
                transmission_header=target.header, body=msg.body,
                put_transaction=txn if uow else None,
                commit_seq=None if uow else base,
            ))
            if not uow:
                base += 1
        Message.objects.bulk_create(rows)
        journal_record(events=[
            journal_event(
                JournalKind.PUT, broker=owner.name, queue=target.queue.name, msg_id=row.msg_id,
                transaction_id=row.put_transaction_id, at=now, persistent=row.persistent, bytes=len(row.body),
            ) for row in rows
        ])
        queues_woken([target.queue.pk])  # pre-emptive getters wait for uncommitted puts too
        if conn is not None:
            now_put = [r.msg_id for r in rows if r.put_transaction_id is None]
            later_put = [r.msg_id for r in rows if r.put_transaction_id is not None]
            if later_put:
                connection_pending_note(connection=conn, transaction=txn, put=later_put[-1])
            if now_put:
                client_sessions_note(broker_id=owner.pk, put={conn.conn_id: now_put[-1]})
    return PutResult(rows, target.queue, txn.id if txn else None)


def _candidates(
    queue: Queue, *, now, msg_id: str | None, correl_id: str | None, group_id: str | None,
    uncommitted_of_others: str | None = None,
):
    """Messages an unordered get may take, in delivery order: not in flight, not locked,
    not expired. With ``uncommitted_of_others`` (the getter's transaction id) a pre-emptive
    get also sees other transactions' uncommitted puts, never its own."""
    qs = Message.objects.filter(queue=queue, get_transaction__isnull=True, lock_token__isnull=True).filter(
        not_expired(now)
    )
    if uncommitted_of_others:
        qs = qs.filter(Q(put_transaction__isnull=True) | ~Q(put_transaction=uncommitted_of_others))
    elif queue.read_order == ReadOrder.COMMIT:
        qs = qs.filter(commit_seq__isnull=False)
    else:
        qs = qs.filter(put_transaction__isnull=True)
    if msg_id:
        qs = qs.filter(msg_id=msg_id)
    if correl_id:
        qs = qs.filter(correl_id=correl_id)
    if group_id:
        qs = qs.filter(group_id=group_id)
    return delivery_ordered(qs, queue, with_uncommitted=bool(uncommitted_of_others))


def _preemptive_needs_graph_lock(*, broker: str, queue: str, transaction_id: str | None,
                                 connection_id: str | None) -> bool:
    """Whether a pre-emptive get may meet another transaction's uncommitted put, so must
    hold the exclusive link-graph lock (PostgreSQL) before it locks any row. A look without
    locks; if it says no, the get takes committed messages only."""
    if not link_graph_locking():
        return False
    source = _get_source(broker=broker, queue=queue)
    own = transaction_id
    if own is None and connection_id:
        own = Connection.objects.filter(pk=connection_id).values_list("current_transaction_id", flat=True).first()
    uncommitted = Message.objects.filter(queue=source, put_transaction__isnull=False, get_transaction__isnull=True)
    if own:
        uncommitted = uncommitted.exclude(put_transaction=own)
    return uncommitted.exists()


def _options_checked(*, source: Queue, ordered: bool, preemptive: bool, mode: str, match: dict,
                     under_uow: bool) -> None:
    if ordered and preemptive and source.read_order == ReadOrder.COMMIT:
        raise OptionsConflict("An ordered pre-emptive get is impossible on a commit-ordered queue: "
                              "an uncommitted message has no place in commit order yet.")
    if ordered and any(match.values()):
        raise OptionsConflict("An ordered get takes the next message in order; it cannot also match by id.")
    if mode != "destructive" and under_uow:
        raise OptionsConflict(f"A {mode} get is not part of a unit of work "
                              "(complete a peek-locked message under one instead).")


def _locks_taken(rows: list[Message], *, source: Queue, now) -> None:
    until = now + timedelta(milliseconds=source.lock_duration_ms)
    for m in rows:
        m.lock_token = uuid.uuid4().hex
        m.locked_until = until
        m.delivery_count += 1
        Message.objects.filter(pk=m.pk).update(
            lock_token=m.lock_token, locked_until=until, delivery_count=m.delivery_count,
        )


def _get_once(
    *, broker: str, queue: str, transaction_id: str | None, wanted: bool, connection_id: str | None, batch: int,
    msg_id: str | None, correl_id: str | None, group_id: str | None, preemptive: bool = False,
    ordered: bool = False, mode: str = "destructive",
) -> GetResult:
    match = {"msg_id": msg_id, "correl_id": correl_id, "group_id": group_id}
    graph_lock = preemptive and _preemptive_needs_graph_lock(
        broker=broker, queue=queue, transaction_id=transaction_id, connection_id=connection_id,
    )
    now = timezone.now()
    with transaction_timeouts_applied(), db.atomic():
        if graph_lock:
            link_graph_lock(exclusive=True)
        source = _get_source(broker=broker, queue=queue)
        ordered = is_ordered(source, ordered)
        _options_checked(source=source, ordered=ordered, preemptive=preemptive, mode=mode, match=match,
                         under_uow=bool(transaction_id or wanted or preemptive))
        owner = source.broker
        conn = _connection(connection_id, owner)
        txn = transaction_for_operation(transaction_id=transaction_id, broker=owner.name) if transaction_id else None
        if preemptive and txn is None:
            txn = _unit_of_work(broker=owner, transaction_id=None, wanted=True, connection=conn)
        # Without the graph lock on PostgreSQL, take committed messages only.
        see_uncommitted = preemptive and (graph_lock or not link_graph_locking())
        reason = None
        if ordered:
            list(Queue.objects.select_for_update().filter(pk=source.pk).values_list("pk"))  # one ordered getter at a time
            pick = ordered_pick(source, now=now, batch=batch, own_transaction=txn.id if txn else None,
                                preemptive=see_uncommitted)
            rows, reason = pick.messages, pick.reason
        else:
            rows = list(
                _candidates(source, now=now, uncommitted_of_others=txn.id if see_uncommitted else None, **match)
                .select_for_update(skip_locked=True)[:batch]
            )
        if not rows:
            reason = reason or ("no_match" if any(match.values()) else "empty")
            return GetResult([], source, txn.id if txn else transaction_id, reason)
        if mode == "browse":
            return GetResult(rows, source, None)
        if mode == "peek_lock":
            _locks_taken(rows, source=source, now=now)
            journal_record(events=[
                journal_event(JournalKind.LOCK, broker=owner.name, queue=source.name, msg_id=m.msg_id, at=now,
                              delivery_count=m.delivery_count)
                for m in rows
            ])
            return GetResult(rows, source, None)
        if txn is None:  # begun only once there is something to get
            txn = _unit_of_work(broker=owner, transaction_id=None, wanted=wanted, connection=conn)
        ids = [m.pk for m in rows]
        if txn is not None:
            Message.objects.filter(pk__in=ids).update(
                get_transaction=txn, delivery_count=F("delivery_count") + 1,
            )
            for m in rows:
                m.get_transaction = txn
                m.delivery_count += 1
            transaction_links_add(downstream=txn, upstream_refs=[
                (m.put_transaction_id, m.msg_id) for m in rows if m.put_transaction_id is not None
            ])
            if conn is not None:
                connection_pending_note(connection=conn, transaction=txn, got=rows[-1].msg_id)
        else:
            Message.objects.filter(pk__in=ids).delete()
            queue_release(counts={source.pk: len(rows)})
            queues_woken([source.pk])  # an ordered getter may be waiting for this one to go
            if conn is not None:
                client_sessions_note(broker_id=owner.pk, got={conn.conn_id: rows[-1].msg_id})
        journal_record(events=[
            journal_event(
                JournalKind.GET, broker=owner.name, queue=source.name, msg_id=m.msg_id,
                transaction_id=txn.id if txn else None, at=now, put_time=m.put_time.isoformat(),
                preemptive=m.put_transaction_id is not None,
            ) for m in rows
        ])
    return GetResult(rows, source, txn.id if txn else None)


def _match_id(name: str, value: str | None) -> str | None:
    if value is None:
        return None
    if not HEX_ID.match(value):
        raise InvalidInput(f"{name} must be 48 hexadecimal characters.", errors={name: ["Must be 48 hex characters."]})
    return value.lower()


def message_get(
    *, broker: str, queue: str, transaction_id: str | None = None, syncpoint: str | None = None,
    connection_id: str | None = None, wait: float = 0, batch: int = 1, msg_id: str | None = None,
    correl_id: str | None = None, group_id: str | None = None, mode: str = "destructive",
    commit_first: bool = False, preemptive: bool = False, ordered: bool = False,
) -> GetResult:
    """Get up to ``batch`` messages in delivery order (priority if the queue says so, then put
    order), skipping expired ones. Under a unit of work the messages stay on the queue in
    flight until it commits (a rollback returns them); otherwise the get is final. Waits up
    to ``wait`` seconds for a message, without holding a database transaction meanwhile.

    ``preemptive`` (only under a unit of work) may also take another transaction's
    uncommitted put, linking that producer upstream of the getter: the getter's commit is
    then held until the producer commits, and the producer's rollback backs it out."""
    if mode not in GET_MODES:
        raise InvalidInput("mode must be destructive, browse or peek_lock.", errors={"mode": ["Invalid choice."]})
    if not 1 <= batch <= settings.BATON_MAX_BATCH:
        raise InvalidInput(f"batch must be from 1 to {settings.BATON_MAX_BATCH}.", errors={"batch": ["Out of range."]})
    if not 0 <= wait <= settings.BATON_MAX_WAIT_S:
        raise InvalidInput(f"wait must be from 0 to {settings.BATON_MAX_WAIT_S} seconds.", errors={"wait": ["Out of range."]})
    msg_id, correl_id, group_id = (_match_id(name, value) for name, value in
                                   (("msg_id", msg_id), ("correl_id", correl_id), ("group_id", group_id)))
    syncpoint = _syncpoint_checked(syncpoint, transaction_id)
    if syncpoint == "if_persistent":
        raise InvalidInput("A get takes syncpoint yes or no.", errors={"syncpoint": ["Invalid choice."]})
    if preemptive and syncpoint != "yes":
        raise OptionsConflict("A pre-emptive get needs a unit of work: name a transaction or ask for syncpoint yes.")
    if commit_first:
        if not connection_id:
            raise OptionsConflict("commit_first needs a connection whose unit of work it commits.")
        conn = connection_get(conn_id=connection_id)
        if conn.current_transaction_id and transaction_id not in (None, conn.current_transaction_id):
            raise OptionsConflict("commit_first commits the connection's unit of work; name no other transaction.")
        if conn.current_transaction_id:
            transaction_commit(transaction_id=conn.current_transaction_id)
            transaction_id = None
    wanted = syncpoint == "yes"

    def once() -> GetResult:
        return _get_once(
            broker=broker, queue=queue, transaction_id=transaction_id, wanted=wanted, connection_id=connection_id,
            batch=batch, msg_id=msg_id, correl_id=correl_id, group_id=group_id, preemptive=preemptive,
            ordered=ordered, mode=mode,
        )

    first = once()
    if first.messages or wait <= 0:
        return first
    last = [first]

    def attempt() -> GetResult | None:
        last[0] = once()
        return last[0] if last[0].messages else None

    return wait_for(attempt, keys=[queue_wakeup_key(first.queue.pk)], wait_s=wait) or last[0]


def _cursor_decode(cursor: str | None, order: str) -> int:
    if not cursor:
        return 0
    try:
        data = json.loads(base64.urlsafe_b64decode(cursor.encode("ascii") + b"==="))
        after, by = int(data["after"]), data["by"]
    except (ValueError, KeyError, TypeError, binascii.Error, UnicodeEncodeError) as exc:
        raise InvalidInput("The cursor is not one this API gave out.", errors={"cursor": ["Invalid."]}) from exc
    if by != order:
        raise InvalidInput("The cursor belongs to another kind of browse (ordered or not, or another read order).",
                           errors={"cursor": ["Does not fit this browse."]})
    return after


def _cursor_encode(after: int, order: str) -> str:
    return base64.urlsafe_b64encode(json.dumps({"after": after, "by": order}).encode()).decode("ascii").rstrip("=")


def message_browse(*, broker: str, queue: str, cursor: str | None = None, limit: int = 50,
                   ordered: bool = False) -> BrowseResult:
    """Look at messages without removing them; the cursor marks the position after the
    last message returned, so browsing again from it shows what came since.

    Unordered: available messages in put order. Ordered (reliable browse): every committed
    message in the queue's read order, in flight and locked ones included, never missing
    or repeating one while others commit: on a commit-ordered queue it follows commit
    sequences (assigned under the queue's lock, so none can appear behind the cursor); on
    a put-ordered queue it stops before the first uncommitted put."""
    if not 1 <= limit <= settings.BATON_MAX_BATCH:
        raise InvalidInput(f"limit must be from 1 to {settings.BATON_MAX_BATCH}.", errors={"limit": ["Out of range."]})
    source = queue_get(broker=broker, name=queue)
    if source.kind == QueueKind.ALIAS:
        source = queue_get(broker=broker, name=source.target_queue)
    now = timezone.now()
    if not ordered:
        after = _cursor_decode(cursor, "available")
        rows = list(
            Message.objects.filter(queue=source, id__gt=after, put_transaction__isnull=True,
                                   get_transaction__isnull=True, lock_token__isnull=True)
            .filter(not_expired(now)).order_by("id")[:limit]
        )
        return BrowseResult(rows, source, _cursor_encode(rows[-1].pk if rows else after, "available"))
    key = order_key(source)
    after = _cursor_decode(cursor, key)
    qs = Message.objects.filter(queue=source, **{f"{key}__gt": after}).order_by(key)
    rows = []
    position = after
    for message in qs[:limit]:
        if message.put_transaction_id is not None:  # put order: wait here until it resolves
            break
        position = getattr(message, key)
        if message.expires_at is None or message.expires_at > now:
            rows.append(message)
    return BrowseResult(rows, source, _cursor_encode(position, key))

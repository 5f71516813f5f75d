"""Get: destructive, browse or peek-lock; final or under a unit of work; pre-emptive;
ordered; waiting.

Locking: the link-graph lock (exclusive, PostgreSQL, only for a pre-emptive get that may
take an uncommitted put), the unit of work's row (if any), the queue's row (ordered gets),
then the chosen message rows (``SKIP LOCKED`` for unordered gets, so competing consumers
take different messages), then the queue's row for a final get. See docs/concurrency.md.
"""

from __future__ import annotations

import time
import uuid
from datetime import timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from baton_client.errors import BatonError
from transactions.durability import engine_step, engine_step_outermost
from transactions.exceptions import DefinitionsChanged, SettleFirst, TransactionNotFound
from transactions.journal import journal_record, journal_step_event
from transactions.locks import link_graph_lock, link_graph_locking
from transactions.manager import (
    engine_called,
    transaction_commit,
    transaction_links_add,
    transaction_mark,
    transaction_rollback,
    transaction_timeouts_applied,
)
from transactions.models import JournalKind, Transaction, transaction_id_new
from transactions.wakeup_bus import wakeup_bus
from transactions.queries import cursor, deferred, transactions_mark
from transactions.wakeups import wait_for, wakeup_notify_committed, wakeup_notify_on_commit

from ... import queries
from ...dialects import dialect
from ...definitions import definitions_checked, definitions_trusted
from ... import permissions as may
from baton_client.errors import InvalidInput, OptionsConflict, QueueInUse
from ...exceptions import ConnectionNotFound, QueueNotFound
from ...models import (
    Access,
    Connection,
    DeliverySequence,
    Message,
    Queue,
    ReadOrder,
    put_committed_q,
    put_open_flag,
    put_open_q,
    put_units_open_only,
)
from ...selectors import connection_get, queue_next_release
from ..message_input import iso_once
from .. import locks  # (a module: locks imports this package's common helpers)
from ..ordering import REASON_IN_FLIGHT, delivery_ordered, is_ordered, not_expired, ordered_getters_lock, ordered_pick
from ..reports import COD, reports_send
from ..store import (
    MARK_REPORTS,
    client_sessions_note,
    connection_pending_note,
    queues_woken,
)
from ..room import queue_wait_keys, queue_wakeup_key
from .common import (
    GetResult,
    _connection,
    _get_source,
    _syncpoint_checked,
    _unit_of_work,
    _user_id,
    unit_of_work_joined,
)


def _candidates(
    queue: Queue,
    *,
    now,
    msg_id: str | None,
    correl_id: str | None,
    group_id: str | None,
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
        qs = qs.filter(put_committed_q())
    qs = qs.annotate(put_open=put_open_flag())  # read through put_units_open_only
    if msg_id:
        qs = qs.filter(msg_id=msg_id)
    if correl_id:
        qs = qs.filter(correl_id=correl_id)
    if group_id:
        qs = qs.filter(group_id=group_id)
    return delivery_ordered(qs, queue, with_uncommitted=bool(uncommitted_of_others))


def _preemptive_needs_graph_lock(
    *, broker: str, queue: str, transaction_id: str | None, connection_id: str | None
) -> bool:
    """Whether a pre-emptive get may meet another transaction's uncommitted put, so must
    hold the exclusive link-graph lock (PostgreSQL) before it locks any row. A look without
    locks; if it says no, the get takes committed messages only."""
    if not link_graph_locking():
        return False
    source = _get_source(broker=broker, queue=queue)
    own = transaction_id
    if own is None and connection_id:
        own = Connection.objects.filter(pk=connection_id).values_list("current_transaction_id", flat=True).first()
    uncommitted = Message.objects.filter(put_open_q(), queue=source, get_transaction__isnull=True)
    if own:
        uncommitted = uncommitted.exclude(put_transaction=own)
    return uncommitted.exists()


def _options_checked(
    *, source: Queue, ordered: bool, preemptive: bool, mode: str, match: dict, under_uow: bool
) -> None:
    if ordered and preemptive and source.read_order == ReadOrder.COMMIT:
        raise OptionsConflict(
            "An ordered pre-emptive get is impossible on a commit-ordered queue: "
            "an uncommitted message has no place in commit order yet."
        )
    if ordered and any(match.values()):
        raise OptionsConflict("An ordered get takes the next message in order; it cannot also match by id.")
    if mode != "destructive" and under_uow:
        raise OptionsConflict(
            f"A {mode} get is not part of a unit of work (complete a peek-locked message under one instead)."
        )


def _access_claimed(
    *, source: Queue, lease: tuple[str, object], access: str | None, conn: Connection | None, now
) -> None:
    """Shared or exclusive input (the consumer's choice, else the queue's default). An
    exclusive consumer must come through a connection; its claim is a lease renewed by each
    of its gets and dropped when the connection closes or the lease runs out. While a claim
    is live, every other consumer is refused with queue_in_use. Locks the queue's row when
    it claims."""
    access = access or source.default_access
    holder = conn.conn_id if conn else ""
    lease_holder, lease_until = lease  # read fresh: the cached definition's copy is not kept current
    live = lease_holder and lease_until and lease_until > now
    if access == Access.EXCLUSIVE:
        if conn is None:
            raise OptionsConflict("Exclusive input needs a connection to hold the claim.")
        until = now + timedelta(milliseconds=settings.BATON_EXCLUSIVE_LEASE_MS)
        claimed = (
            Queue.objects.filter(pk=source.pk)
            .filter(
                Q(exclusive_holder="")
                | Q(exclusive_holder=holder)
                | Q(exclusive_until__isnull=True)
                | Q(exclusive_until__lte=now)
            )
            .update(exclusive_holder=holder, exclusive_until=until)
        )
        if claimed:
            return
    elif not live or lease_holder == holder:
        return
    raise QueueInUse(
        f"Queue {source.name!r} is open for exclusive input by another consumer.",
        broker=source.broker.name,
        queue=source.name,
    )


class _Raced(Exception):
    """A chosen message was taken by a concurrent get between the choice and the update
    (possible on PostgreSQL for ordered gets, which choose without row locks). The database
    transaction is undone and the get answers as if the message were in flight."""


def _locks_taken(rows: list[Message], *, source: Queue, now) -> None:
    until = now + timedelta(milliseconds=source.lock_duration_ms)
    for m in rows:
        m.lock_token = uuid.uuid4().hex
        m.locked_until = until
        m.delivery_count += 1
        if not Message.objects.filter(pk=m.pk, get_transaction__isnull=True, lock_token__isnull=True).update(
            lock_token=m.lock_token,
            locked_until=until,
            delivery_count=m.delivery_count,
        ):
            raise _Raced


class _Relisten(Exception):
    """A waiting get read another queue than the one it listens on: the definitions cache it
    took that queue from was stale (the queue was deleted and made again). It listens on the
    one it read and waits on (``message_get``)."""


class _MetOverdue(Exception):
    """The get found a unit of work past its deadline holding messages of its queue: the
    database transaction is undone, that unit of work rolled back for its timeout, and the
    get tried again (``message_get``)."""

    def __init__(self, transaction_id: str) -> None:
        super().__init__(transaction_id)
        self.transaction_id = transaction_id


def _source_and_lease(
    *,
    broker: str,
    queue: str,
    transaction_id: str | None,
    now,
    user,
) -> tuple[Queue, tuple[str, object], Transaction | None, bool, str | None]:
    """The queue a get reads, from the definitions cache checked by the same statement that
    reads the queue's exclusive-input lease and, for a get under a named unit of work, its
    row (locked): one statement in the common case. The row is None when that statement
    could not read it (the caller reads it then). Then whether a peek-lock on the queue ran
    out, and an overdue unit of work holding its messages, if any (``queries.get_start``).
    ``user``: as ``_get_source`` checks it."""
    try:
        source = _get_source(broker=broker, queue=queue, checked=True, user=user)
        found = queries.get_start(queue_id=source.pk, transaction_id=transaction_id, now=now)
    except BatonError:  # perhaps only the cached definition says so: look again below
        found = None
    if found is None or not definitions_checked(found[0]):  # changed since cached: look again
        definitions_checked()
        source = _get_source(broker=broker, queue=queue, checked=True, user=user)
        found = queries.get_start(queue_id=source.pk, transaction_id=None, now=now)
        if found is None:
            raise QueueNotFound(f"No queue {queue!r} on broker {broker!r}.", broker=broker, queue=queue)
    return source, (found[1], found[2]), found[3], found[4], found[5]


def _taken(
    rows: list[Message],
    *,
    source: Queue,
    owner,
    txn: Transaction | None,
    new_id: str | None,
    wanted: bool,
    conn: Connection | None,
    now,
    user=None,
) -> GetResult:
    """After ``queries.messages_take``: the unit of work's bookkeeping (begun now, under the
    id the messages were taken with, if the get asked for one and had none), or a final
    get's; then the journal."""
    if txn is None and new_id is not None:
        txn = _unit_of_work(broker=owner, transaction_id=None, wanted=wanted, connection=conn, new_id=new_id, user=user)
    if txn is not None:
        transaction_links_add(
            downstream=txn,
            upstream_refs=[(u, m.msg_id) for m in rows if (u := _put_unit(m)) is not None],
        )
        if conn is not None:
            connection_pending_note(connection=conn, transaction=txn, got=rows[-1].msg_id)
        if any(m.report for m in rows):
            transaction_mark(transaction=txn, mark=MARK_REPORTS)
    else:
        queries.queues_release(counts={source.pk: len(rows)})
        queues_woken([source.pk])  # an ordered getter may be waiting for this one to go
        if conn is not None:
            client_sessions_note(broker_id=owner.pk, got={conn.conn_id: rows[-1].msg_id})
        _queue_cached(rows, source)
        if any(m.report for m in rows):
            reports_send(originals=[m for m in rows if m.report], feedback=COD)
    times: dict = {}  # messages of one put share their put time: written once
    journal_record(
        events=[
            journal_step_event(
                JournalKind.GET,
                broker=owner.name,
                queue=source.name,
                transaction_id=txn.id if txn else None,
                at=now,
                messages=[
                    {
                        "msg_id": m.msg_id,
                        "put_time": iso_once(m.put_time, times),
                        "preemptive": _put_unit(m) is not None,
                    }
                    for m in rows
                ],
            )
        ]
    )
    return GetResult(rows, source, txn.id if txn else None)


def _get_by_statements(
    *,
    broker: str,
    queue: str,
    transaction_id: str | None,
    wanted: bool,
    connection_id: str | None,
    batch: int,
    msg_id: str | None,
    correl_id: str | None,
    group_id: str | None,
    preemptive: bool = False,
    ordered: bool = False,
    mode: str = "destructive",
    access: str | None = None,
    user=None,
) -> GetResult:
    match = {"msg_id": msg_id, "correl_id": correl_id, "group_id": group_id}
    graph_lock = preemptive and _preemptive_needs_graph_lock(
        broker=broker,
        queue=queue,
        transaction_id=transaction_id,
        connection_id=connection_id,
    )
    under_uow = bool(transaction_id or wanted or preemptive)
    # Only a final destructive get must be on disk when we answer (the message is gone).
    durable = not under_uow and mode == "destructive"
    with transaction_timeouts_applied(), engine_step(durable=durable):
        now = timezone.now()  # taken once this database transaction has begun (SQLite: holds the write lock)
        if graph_lock:
            link_graph_lock(exclusive=True)
        source, lease, locked, lapsed, overdue = _source_and_lease(
            broker=broker,
            queue=queue,
            transaction_id=transaction_id,
            now=now,
            user=user,
        )
        if overdue is not None:  # its messages are the next get's: roll it back first (message_get)
            raise _MetOverdue(overdue)
        if lapsed and mode != "browse":  # a lock that ran out is released now, not at housekeeping
            locks.locks_lapsed_release(queue=source, now=now)
        ordered = is_ordered(source, ordered)
        _options_checked(
            source=source, ordered=ordered, preemptive=preemptive, mode=mode, match=match, under_uow=under_uow
        )
        owner = source.broker
        conn = _connection(connection_id, owner)
        txn = (
            unit_of_work_joined(transaction_id=transaction_id, broker=owner.name, user=user, locked=locked)
            if transaction_id
            else None
        )
        if txn is None and wanted and conn is not None and conn.current_transaction_id:
            # the connection's unit of work, if it has one, is this get's own (never begun here for nothing)
            txn = (
                _unit_of_work(broker=owner, transaction_id=None, wanted=True, connection=conn, user=user)
                if Transaction.objects.filter(pk=conn.current_transaction_id, state="active").exists()
                else None
            )
        if preemptive:
            wanted = True  # a pre-emptive get is always under a unit of work (begun below if it finds something)
        _access_claimed(source=source, lease=lease, access=access, conn=conn, now=now)
        # Without the graph lock on PostgreSQL, take committed messages only.
        see_uncommitted = preemptive and (graph_lock or not link_graph_locking())
        reason = None
        # a unit of work begun later has no puts of its own yet: "-" matches no transaction
        own = txn.id if txn else "-"
        if ordered:
            ordered_getters_lock(source)
            pick = ordered_pick(source, now=now, batch=batch, own_transaction=own, preemptive=see_uncommitted)
            rows, reason = pick.messages, pick.reason
        elif mode == "destructive":  # one statement chooses and takes them
            new_id = None if txn is not None or not wanted else transaction_id_new()
            rows = queries.messages_take(
                queue_id=source.pk,
                now=now,
                limit=batch,
                get_transaction_id=txn.id if txn is not None else new_id,
                priority_first=source.delivery_sequence == DeliverySequence.PRIORITY,
                commit_ordered=source.read_order == ReadOrder.COMMIT,
                uncommitted_of_others=own if see_uncommitted else None,
                match=match,
            )
            if rows:
                return _taken(
                    rows,
                    source=source,
                    owner=owner,
                    txn=txn,
                    new_id=new_id,
                    wanted=wanted,
                    conn=conn,
                    now=now,
                    user=user,
                )
        elif mode == "peek_lock":  # one statement chooses and locks them
            rows = queries.messages_lock(
                queue_id=source.pk,
                now=now,
                limit=batch,
                locked_until=now + timedelta(milliseconds=source.lock_duration_ms),
                priority_first=source.delivery_sequence == DeliverySequence.PRIORITY,
                commit_ordered=source.read_order == ReadOrder.COMMIT,
                uncommitted_of_others=own if see_uncommitted else None,
                match=match,
            )
        else:
            rows = put_units_open_only(
                list(
                    _candidates(
                        source, now=now, uncommitted_of_others=own if see_uncommitted else None, **match
                    ).select_for_update(skip_locked=True)[:batch]
                )
            )
        if not rows:
            reason = reason or ("no_match" if any(match.values()) else "empty")
            return GetResult([], source, txn.id if txn else transaction_id, reason)
        if mode == "browse":
            return GetResult(rows, source, None)
        if mode == "peek_lock":
            if ordered:  # an ordered get chose without locking: lock what it chose
                _locks_taken(rows, source=source, now=now)
            journal_record(
                events=[
                    journal_step_event(
                        JournalKind.LOCK,
                        broker=owner.name,
                        queue=source.name,
                        transaction_id=None,
                        at=now,
                        messages=[{"msg_id": m.msg_id, "delivery_count": m.delivery_count} for m in rows],
                    )
                ]
            )
            return GetResult(rows, source, None)
        # An ordered get chose without taking: take what it chose (a concurrent get may have
        # been first on PostgreSQL: then it answers as in flight), then the same bookkeeping.
        new_id = None if txn is not None or not wanted else transaction_id_new()
        ids = [m.pk for m in rows]
        if not queries.messages_take_chosen(ids=ids, get_transaction_id=txn.id if txn is not None else new_id):
            raise _Raced
        for m in rows:
            if txn is not None or new_id is not None:
                m.get_transaction_id = txn.id if txn is not None else new_id
                m.delivery_count += 1
        return _taken(
            rows, source=source, owner=owner, txn=txn, new_id=new_id, wanted=wanted, conn=conn, now=now, user=user
        )


def _get_once(
    *,
    broker: str,
    queue: str,
    transaction_id: str | None,
    wanted: bool,
    connection_id: str | None,
    batch: int,
    msg_id: str | None,
    correl_id: str | None,
    group_id: str | None,
    preemptive: bool,
    ordered: bool,
    mode: str,
    access: str | None,
    user,
) -> GetResult:
    """One look of a get at its queue: an unordered destructive get, not pre-emptive, without a connection and not
    exclusive, as one call of the database's own function where it has one (PostgreSQL:
    ``_get_called``); every other get, and every get on SQLite, as the get's statements
    (``_get_by_statements``). The queue comes from the definitions cache, trusted: the function
    compares the version, and a stale cache is read again and the call made again."""
    match = {"msg_id": msg_id, "correl_id": correl_id, "group_id": group_id}
    steps = {
        "broker": broker,
        "queue": queue,
        "transaction_id": transaction_id,
        "wanted": wanted,
        "connection_id": connection_id,
        "batch": batch,
        "msg_id": msg_id,
        "correl_id": correl_id,
        "group_id": group_id,
        "preemptive": preemptive,
        "ordered": ordered,
        "mode": mode,
        "access": access,
        "user": user,
    }
    if dialect().get_call is None or mode != "destructive" or preemptive or ordered or connection_id:
        return _get_by_statements(**steps)
    reports = False
    while True:
        version = definitions_trusted()
        if version is None:  # an empty cache: filled from here on
            definitions_checked()
            version = definitions_trusted()
        try:
            source = _get_source(broker=broker, queue=queue, checked=True, user=user)
        except BatonError:
            if definitions_checked():
                raise
            continue  # said on the strength of a stale cache: again
        if is_ordered(source, False) or (access or source.default_access) == Access.EXCLUSIVE:
            return _get_by_statements(**steps)  # the queue's own order, or a claim: the get's statements
        try:
            with transaction_timeouts_applied():
                return _get_called(
                    source=source,
                    version=version,
                    transaction_id=transaction_id,
                    wanted=wanted,
                    batch=batch,
                    match=match,
                    user=user,
                    reports=reports,
                )
        except DefinitionsChanged:
            definitions_checked()  # the cache read again: the call again
        except SettleFirst as exc:
            if exc.what == "overdue":  # its messages are the next get's: roll it back first (message_get)
                raise _MetOverdue(exc.transaction_id) from None
            if exc.what == "lapsed":  # a lock that ran out is released now, not at housekeeping
                with engine_step(durable=False):
                    locks.locks_lapsed_release(queue=source, now=timezone.now())
            else:  # reports: the answer is read before the commit, to send or mark them
                reports = True


def _get_called(
    *,
    source: Queue,
    version: int,
    transaction_id: str | None,
    wanted: bool,
    batch: int,
    match: dict,
    user,
    reports: bool,
) -> GetResult:
    """The get as one call of ``dialect().get_call`` in an engine step of its own, sent with
    the step's ``BEGIN`` and ``COMMIT`` in one round trip (``reports``: its answer read
    before the ``COMMIT``, to send the reports of a final get or mark the unit of work that
    took them). A final get's wake-up key is ``NOTIFY``ed by the function on the bus's
    channel when there is one (delivered at commit), else published after the commit. Its
    errors are raised as the project's (``engine_called``)."""
    owner = source.broker
    now = timezone.now()
    final = not transaction_id and not wanted
    begun_id = deadline_at = None
    if not transaction_id and wanted:  # begun only if it takes anything
        begun_id = transaction_id_new()
        timeout = owner.transaction_timeout_ms
        deadline_at = now + timedelta(milliseconds=timeout) if timeout > 0 else None
    priority_first = source.delivery_sequence == DeliverySequence.PRIORITY
    commit_ordered = source.read_order == ReadOrder.COMMIT
    sql, params = dialect().get_call(
        version=version,
        queue_id=source.pk,
        broker=owner.name,
        queue=source.name,
        transaction_id=transaction_id,
        begun_id=begun_id,
        deadline_at=deadline_at,
        user_id=None if user is None or getattr(user, "is_superuser", False) else user.pk,
        begun_user_id=_user_id(user),
        now=now,
        limit=batch,
        priority_first=priority_first,
        commit_ordered=commit_ordered,
        match=match,
        reports=reports,
    )
    outermost = engine_step_outermost()
    channel = wakeup_bus().channel_in_transaction if final and outermost else None
    taker = transaction_id or begun_id
    rows: list = []

    def step() -> None:
        with engine_step(durable=final):  # only a final get must be on disk when it answers
            if not reports:
                deferred(sql, [*params, channel], rows=rows)
                return
            with cursor() as c:
                c.execute(sql, [*params, channel])
                rows.extend(c.fetchall())
            asking = [m for m in _in_order(rows) if m.report]
            if asking and final:
                _queue_cached(asking, source)
                reports_send(originals=asking, feedback=COD)
            elif asking:
                transactions_mark(transaction_ids=[taker], mark=MARK_REPORTS)

    def _in_order(found: list) -> list[Message]:
        return queries._taken_in_order(found, priority_first=priority_first, commit_ordered=commit_ordered)

    engine_called(transaction_id, step)
    taken = _in_order(rows)
    if not taken:
        return GetResult([], source, transaction_id, "no_match" if any(match.values()) else "empty")
    if final:
        _queue_cached(taken, source)
        if outermost:
            wakeup_notify_committed([queue_wakeup_key(source.pk)], published=channel is not None)
        else:
            wakeup_notify_on_commit([queue_wakeup_key(source.pk)])
    return GetResult(taken, source, taker)


def _queue_cached(messages: list[Message], queue: Queue) -> None:
    """Each message's ``queue`` (the one its row names) given as ``queue``, set in its cache
    without the foreign key's descriptor (which checks the instance and the database: a
    call per message at 100 a get)."""
    for m in messages:
        m._state.fields_cache["queue"] = queue


def message_get(
    *,
    broker: str,
    queue: str,
    transaction_id: str | None = None,
    syncpoint: str | None = None,
    connection_id: str | None = None,
    wait: float = 0,
    batch: int = 1,
    msg_id: str | None = None,
    correl_id: str | None = None,
    group_id: str | None = None,
    mode: str = "destructive",
    commit_first: bool = False,
    preemptive: bool = False,
    ordered: bool = False,
    access: str | None = None,
    user=None,
) -> GetResult:
    """Get up to ``batch`` messages in delivery order (priority if the queue says so, then put
    order), skipping expired ones. Under a unit of work the messages stay on the queue in
    flight until it commits (a rollback returns them); otherwise the get is final. Waits up
    to ``wait`` seconds for a message, without holding a database transaction meanwhile.

    ``preemptive`` (only under a unit of work) may also take another transaction's
    uncommitted put, linking that producer upstream of the getter: the getter's commit is
    then held until the producer commits, and the producer's rollback backs it out.

    ``user``: who gets (a transport passes its authenticated user): a unit of work it joins
    or commits first must be theirs (docs/permissions.md), one it begins is theirs. None:
    system code.

    The arguments are valid (a transport parses what a client sends through
    ``MessageGet.Input``; platform code passes what it built): ``mode`` one of destructive,
    browse, peek_lock; ``access`` None, shared or exclusive; ``batch`` 1 to BATON_MAX_BATCH;
    ``wait`` 0 to BATON_MAX_WAIT_S; the ids 48 lower-case hex characters; ``syncpoint`` None,
    yes or no. Checked here: what needs the database, and the options that conflict (409)."""
    syncpoint = _syncpoint_checked(syncpoint, transaction_id)
    if preemptive and syncpoint != "yes":
        raise OptionsConflict("A pre-emptive get needs a unit of work: name a transaction or ask for syncpoint yes.")
    outside = False
    if commit_first:  # docs/design.md §4: commit the unit of work first, then get outside it
        _get_source(broker=broker, queue=queue, user=user)  # a get refused commits nothing
        if connection_id:
            conn = connection_get(conn_id=connection_id)
            if conn.broker.name != broker:
                raise InvalidInput(
                    f"Connection {connection_id} is to broker {conn.broker.name!r}, not {broker!r}.",
                    connection=connection_id,
                )
            if conn.current_transaction_id and transaction_id not in (None, conn.current_transaction_id):
                raise OptionsConflict("commit_first commits the connection's unit of work; name no other transaction.")
            current = conn.current_transaction_id or transaction_id
        elif transaction_id:
            current = transaction_id
        else:
            raise OptionsConflict("commit_first needs a transaction, or a connection, whose unit of work it commits.")
        row = Transaction.objects.filter(pk=current).first() if current else None
        if row is not None and user is not None:  # its owner, before its state (docs/permissions.md)
            try:
                may.require_transaction_owner(user, transaction=row)
            except TransactionNotFound:
                if current != transaction_id:  # the connection's: the connection is not confirmed
                    raise ConnectionNotFound(f"No open connection {connection_id}.", connection=connection_id) from None
                raise
        if row is not None and row.state == "active":
            transaction_commit(transaction_id=current)  # committed, or held until its upstreams commit
        transaction_id, outside = None, True
    wanted = syncpoint == "yes" and not outside

    def once() -> GetResult:
        while True:  # each round rolls back one more overdue unit of work, if it met one
            try:
                return _get_once(
                    broker=broker,
                    queue=queue,
                    transaction_id=transaction_id,
                    wanted=wanted,
                    connection_id=connection_id,
                    batch=batch,
                    msg_id=msg_id,
                    correl_id=correl_id,
                    group_id=group_id,
                    preemptive=preemptive,
                    ordered=ordered,
                    mode=mode,
                    access=access,
                    user=user,
                )
            except _Raced:
                return GetResult([], _get_source(broker=broker, queue=queue), transaction_id, REASON_IN_FLIGHT)
            except _MetOverdue as exc:  # as housekeeping would: its gets return, its puts vanish
                transaction_rollback(transaction_id=exc.transaction_id, reason="timeout", require_open=False)

    if wait <= 0:
        return once()
    deadline = time.monotonic() + wait
    try:  # the queue to listen on, from the definitions cache, trusted: the attempts compare the version
        if definitions_trusted() is None:
            definitions_checked()
        source_id = [_get_source(broker=broker, queue=queue, checked=True, user=user).pk]
    except BatonError:  # the get says why (or finds the cache stale), as it would without a wait
        first = once()
        if first.messages:
            return first
        source_id = [first.queue.pk]
    last: list[GetResult] = []

    def attempt() -> GetResult | None:
        last[:] = [once()]
        if last[0].queue.pk != source_id[0]:
            raise _Relisten
        return last[0] if last[0].messages else None

    def due() -> float | None:  # a lock or a holder's deadline running out wakes no one: look again then
        now = timezone.now()
        at = queue_next_release(queue_id=source_id[0], now=now)
        return None if at is None else (at - now).total_seconds()

    while True:
        try:
            keys = queue_wait_keys(source_id[0], preemptive=preemptive)
            return wait_for(attempt, keys=keys, wait_s=deadline - time.monotonic(), due=due) or last[0]
        except _Relisten:  # the cache was stale (the queue made again): listen on the queue the get read
            if last[0].messages:
                return last[0]
            source_id[0] = last[0].queue.pk


def _put_unit(m: Message) -> str | None:
    """The unit of work that put ``m``, None once committed, read from the instance's
    ``__dict__``: as an attribute, a foreign key's id is a descriptor call."""
    return m.__dict__["put_transaction_id"]

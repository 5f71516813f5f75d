"""The transaction manager: begin, commit (held while upstreams are open), rollback with
its downstream cascade, the ready-check, and timeouts.

Locking (see docs/concurrency.md):

* Every function here that changes state runs in one database transaction, and the
  resource managers' effects run inside it, so states and effects change together.
* Transaction rows are locked with ``SELECT ... FOR UPDATE`` (a no-op on SQLite, where
  IMMEDIATE transactions serialise writers). A function locks the transaction it was
  called for first, then the others it resolves with it, then resource rows (queues, then
  messages) through the resource managers.
* ``transaction_for_operation`` is for resource managers that add work to a unit of work:
  the caller holds an open database transaction; it locks the transaction's row.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Callable

from django.db import DatabaseError
from django.utils import timezone

from . import queries
from .dialects import dialect
from .durability import engine_step, engine_step_outermost
from baton_client.errors import QueueFull, QueueInUse, TransactionBackedOut, TransactionNotActive
from .exceptions import DefinitionsChanged, SettleFirst, TransactionNotFound
from .journal import journal_event, journal_record, journal_step_event
from .locks import link_graph_lock
from .models import OPEN_STATES, JournalKind, Link, Transaction, TransactionState, transaction_id_new
from .resources import resource_managers
from .wakeup_bus import wakeup_bus
from .wakeups import wait_for, wakeup_notify_committed, wakeup_notify_on_commit


#: The mark of a transaction that has (or had) links: only those need the link graph read
#: when they resolve.
MARK_LINKED = "linked"


def _linked(*transactions: Transaction) -> bool:
    return any(MARK_LINKED in t.marks for t in transactions)


class TransactionOverdue(Exception):
    """Raised inside a database transaction that found a unit of work past its deadline (its
    own, or ``met_by``'s upstream); :func:`transaction_timeouts_applied` rolls that unit of
    work back once the database transaction has been undone."""

    def __init__(self, transaction_id: str, *, met_by: str | None = None) -> None:
        super().__init__(transaction_id)
        self.transaction_id = transaction_id
        self.met_by = met_by


class _UpstreamSettled(Exception):
    """An overdue upstream was rolled back and its cascade did not reach the unit of work that
    met it (no longer linked): that unit of work's operation is tried again."""


@dataclass
class CommitOutcome:
    transaction: Transaction
    waiting_on: list[str] = field(default_factory=list)

    @property
    def state(self) -> str:
        return self.transaction.state


@dataclass
class RollbackOutcome:
    transaction: Transaction
    cascaded: list[str] = field(default_factory=list)
    #: False when the transaction had already resolved before this call.
    rolled_back_now: bool = True


@dataclass
class CheckOutcome:
    result: str  # ready | pending | backed_out
    waiting_on: list[str] = field(default_factory=list)
    reason: str = ""


def _backed_out(txn: Transaction) -> TransactionBackedOut:
    return TransactionBackedOut(
        f"Transaction {txn.id} was rolled back: {txn.reason or 'rolled back'}.",
        transaction=txn.id,
        reason=txn.reason,
    )


#: ``_under_graph_lock`` did not read the unit of work's row: ``_locked`` reads it.
NOT_READ = object()


def _locked(transaction_id: str, row=NOT_READ) -> Transaction:
    """The unit of work's row, locked (``row``: read and locked already, or None if absent)."""
    txn = queries.transaction_row(transaction_id=transaction_id, lock=True) if row is NOT_READ else row
    if txn is None:
        raise TransactionNotFound(f"No transaction {transaction_id}.", transaction=transaction_id)
    return txn


def transaction_begin(
    *,
    broker: str,
    timeout_ms: int,
    owner: str = "",
    transaction_id: str | None = None,
    user_id: int | None = None,
    first: Callable[[], None] | None = None,
) -> Transaction:
    """Begin a unit of work on a broker. It is rolled back if still open after ``timeout_ms``.
    ``transaction_id``: an id chosen beforehand (a get that took messages under it in the
    same database transaction); a new one by default. ``user_id``: the user it belongs to
    (docs/permissions.md, "Ownership of units of work"); None for system code (channel
    agents, management commands), whose units of work only superusers and the broker's
    admins may act on. ``first``: called first inside the database transaction that writes
    the unit of work (a check of what the caller assumed: if it raises, nothing is written)."""
    now = timezone.now()
    txn = queries.transaction_new(
        transaction_id=transaction_id or transaction_id_new(),
        broker=broker,
        owner=owner,
        created_at=now,
        deadline_at=now + timedelta(milliseconds=timeout_ms) if timeout_ms > 0 else None,
        user_id=user_id,
    )
    if queries.default_db().in_atomic_block:  # begun by an operation's first put or get, in its step
        if first is not None:
            first()
        _begin_written(txn, now=now, user_id=user_id)
        return txn
    with engine_step(durable=False):  # a new unit of work promises nothing yet
        if first is not None:
            first()
        _begin_written(txn, now=now, user_id=user_id)
    return txn


def _begin_written(txn: Transaction, *, now, user_id: int | None) -> None:
    # the journal first: on PostgreSQL it travels with the INSERT (queries.deferred)
    journal_record(events=[journal_event(JournalKind.BEGIN, broker=txn.broker, transaction_id=txn.id, at=now)])
    queries.transaction_insert(
        transaction_id=txn.id,
        broker=txn.broker,
        owner=txn.owner,
        created_at=now,
        deadline_at=txn.deadline_at,
        user_id=user_id,
    )


def transaction_for_operation(*, transaction_id: str, broker: str, locked: Transaction | None = None) -> Transaction:
    """Lock an active unit of work so that a resource manager can add work to it.

    Caller holds: an open database transaction. Raises :class:`TransactionOverdue` when the
    deadline has passed (wrap the database transaction in :func:`transaction_timeouts_applied`).
    ``locked``: the row, if the caller has already read and locked it in this database
    transaction."""
    txn = locked if locked is not None and locked.id == transaction_id else _locked(transaction_id)
    if txn.state == TransactionState.ROLLED_BACK:
        raise _backed_out(txn)
    if txn.state != TransactionState.ACTIVE:
        raise TransactionNotActive(
            f"Transaction {txn.id} is {txn.state}; no more work can be added to it.",
            transaction=txn.id,
            state=txn.state,
        )
    if txn.broker != broker:
        raise TransactionNotActive(
            f"Transaction {txn.id} belongs to broker {txn.broker}, not {broker}.",
            transaction=txn.id,
        )
    if txn.deadline_at is not None and txn.deadline_at <= timezone.now():
        raise TransactionOverdue(txn.id)
    return txn


class transaction_timeouts_applied:  # named as the function it was: ``with transaction_timeouts_applied():``
    """Around a database transaction that may meet an overdue unit of work: once that
    database transaction has been undone, roll the unit of work back for its timeout and
    tell the caller it was backed out (an upstream's rollback cascades to the unit of work
    that met it, which is then the one named). A class, not a generator: entered by every
    put and get, where ``@contextmanager`` costs a generator and a ``StopIteration``."""

    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc_type is None or not issubclass(exc_type, TransactionOverdue):
            return False
        txn = transaction_rollback(transaction_id=exc.transaction_id, reason="timeout", require_open=False).transaction
        if exc.met_by is not None:
            txn = queries.transaction_row(transaction_id=exc.met_by, lock=False) or txn
            if txn.state != TransactionState.ROLLED_BACK:  # it was no longer downstream: try again
                raise _UpstreamSettled from exc
        raise _backed_out(txn) from exc


def transaction_mark(*, transaction: Transaction, mark: str) -> None:
    """Note that the unit of work has effects of a kind its resource managers must look
    for when it resolves (so that they need not look in every commit).

    Caller holds: the transaction's row (from ``transaction_for_operation``)."""
    if mark not in transaction.marks:
        transaction.marks = [*transaction.marks, mark]
        queries.transaction_marks_set(transaction_id=transaction.pk, marks=transaction.marks)


def transaction_links_add(*, downstream: Transaction, upstream_refs: list[tuple[str, str]]) -> None:
    """Record that ``downstream`` pre-emptively consumed resources (``(upstream_id, ref)``
    pairs: a message id and the transaction that put it, still uncommitted).

    Caller holds: an open database transaction, the exclusive link-graph lock (PostgreSQL),
    the downstream's row and the resources' rows. Takes: the upstreams' rows not yet marked
    as linked (``queries.transactions_mark``)."""
    if not upstream_refs:
        return
    now = timezone.now()
    transaction_mark(transaction=downstream, mark=MARK_LINKED)
    upstream_ids = sorted({u for u, _ in upstream_refs})
    queries.transactions_mark(transaction_ids=upstream_ids, mark=MARK_LINKED)  # in SQL: no lost update of marks
    queries.links_insert(downstream_id=downstream.id, upstream_refs=upstream_refs, created_at=now)
    journal_record(  # one row for the step's links (transactions.journal.journal_step_event)
        events=[
            journal_step_event(
                JournalKind.LINK,
                broker=downstream.broker,
                queue="",
                transaction_id=downstream.id,
                at=now,
                messages=[{"msg_id": ref, "upstream": u} for u, ref in upstream_refs],
            )
        ]
    )


# --- the link-graph lock -----------------------------------------------------------------


class _NeedsExclusive(Exception):
    pass


def _under_graph_lock(transaction_id: str, work, *, durable: bool, promises_nothing=None):
    """Run ``work(row)`` in one database transaction (durable or not, see
    transactions/durability.py) holding the link-graph lock: shared if the transaction has
    no links, exclusive if it has (retrying exclusively when a link appears between the look
    and the lock). See transactions/locks.py. ``row``: the unit of work's row when the look
    read and locked it in the same round trip (None if there is none), else ``NOT_READ``.
    ``promises_nothing(result)``: true when what the work did needs no sync after all."""
    exclusive = False
    while True:
        try:
            with engine_step(durable=durable) as step:
                if exclusive:
                    link_graph_lock(exclusive=True)
                    result = work(NOT_READ)
                else:
                    linked, row = dialect().graph_lock_shared_and_links(transaction_id=transaction_id)
                    if linked:
                        raise _NeedsExclusive
                    result = work(row)
                if promises_nothing is not None and promises_nothing(result):
                    step.promises_nothing()
                return result
        except _NeedsExclusive:
            exclusive = True


# --- commit -----------------------------------------------------------------------------


def _open_upstream_closure(start: Transaction, resolved: set[str]) -> dict[str, Transaction]:
    """Every open transaction upstream of ``start`` (transitively, ``start`` included),
    leaving out those already committed in this resolution. Locks each one it returns."""
    members = {start.id: start}
    frontier = [start.id] if _linked(start) else []
    while frontier:
        upstream_ids = queries.links_upstream_ids(downstream_ids=frontier) - members.keys() - resolved
        frontier = []
        for txn in queries.transactions_locked(transaction_ids=sorted(upstream_ids), states=OPEN_STATES):
            members[txn.id] = txn
            frontier.append(txn.id)
    return members


def _commit_resolution(start: Transaction, *, now) -> tuple[list[Transaction], list[str]]:
    """Which transactions commit now because ``start`` asked to commit (or its last upstream
    committed): ``start``'s open upstream closure if every member has asked to commit, and
    then, transitively, every held downstream that this frees. Returns the transactions to
    commit and, when ``start`` stays held, the open upstreams it waits on. Raises
    :class:`TransactionOverdue` for an upstream of ``start`` past its deadline: it is rolled
    back at once (cascading to ``start``), not left to housekeeping."""
    to_commit: dict[str, Transaction] = {}
    waiting_on: list[str] = []
    worklist = [start]
    while worklist:
        txn = worklist.pop()
        if txn.id in to_commit:
            continue
        closure = _open_upstream_closure(txn, set(to_commit))
        if txn is start:
            for member in closure.values():
                if member.deadline_at is not None and member.deadline_at <= now:
                    raise TransactionOverdue(member.id, met_by=start.id)
        if any(member.state != TransactionState.COMMIT_HELD for member in closure.values()):
            if txn is start:
                direct = queries.links_upstream_ids(downstream_ids=[txn.id])
                waiting_on = sorted(direct & closure.keys())
            continue
        to_commit.update(closure)
        if not _linked(*closure.values()):
            continue
        for downstream in queries.transactions_locked(
            transaction_ids=queries.links_open_downstream_ids(upstream_ids=list(closure)),
            states=[TransactionState.COMMIT_HELD],
        ):
            if downstream.id not in to_commit:
                worklist.append(downstream)
    return list(to_commit.values()), waiting_on


def _commit_step(transaction_id: str, first: Callable[[Transaction], None] | None = None) -> CommitOutcome:
    """The commit by the transaction manager's statements, its resource managers acting in
    it: a unit of work with marks or links, one with ``first``, every one on SQLite.

    Durable when it commits. A commit held on its upstreams promises nothing on disk (its
    reply is not "committed") and skips the sync: should the server stop before the next
    one, restart recovery rolls the held unit of work back, as every open one, whether or
    not its request to commit reached the disk; the upstream's commit that releases it is
    durable and, the log being sequential, puts the request on disk with it. A channel's
    units of work, in doubt after a restart rather than rolled back, commit inside the
    agent's database transaction, which keeps its sync (``engine_step``'s ``Step``)."""
    return _under_graph_lock(
        transaction_id,
        lambda row: _commit_locked(transaction_id, row, first),
        durable=True,
        promises_nothing=_held,
    )


def _held(outcome: CommitOutcome) -> bool:
    return outcome.state == TransactionState.COMMIT_HELD


def _commit_locked(
    transaction_id: str, row=NOT_READ, first: Callable[[Transaction], None] | None = None
) -> CommitOutcome:
    now = timezone.now()
    txn = _locked(transaction_id, row)
    if first is not None:
        first(txn)
    if txn.state == TransactionState.ROLLED_BACK:
        raise _backed_out(txn)
    if txn.state == TransactionState.COMMITTED:
        return CommitOutcome(txn)
    if txn.deadline_at is not None and txn.deadline_at <= now:
        raise TransactionOverdue(txn.id)
    newly_held = txn.state == TransactionState.ACTIVE
    txn.state = TransactionState.COMMIT_HELD
    txn.commit_requested_at = txn.commit_requested_at or now
    to_commit, waiting_on = _commit_resolution(txn, now=now)
    if not to_commit:
        queries.transaction_held(transaction_id=txn.id, commit_requested_at=txn.commit_requested_at)
        if newly_held:
            journal_record(
                events=[
                    journal_event(
                        JournalKind.HOLD,
                        broker=txn.broker,
                        transaction_id=txn.id,
                        waiting_on=waiting_on,
                        at=now,
                    )
                ]
            )
        return CommitOutcome(txn, waiting_on)
    _commit_apply(to_commit, requested_by=txn.id, now=now)
    txn.state = TransactionState.COMMITTED
    txn.resolved_at = now
    return CommitOutcome(txn)


def _commit_apply(members: list[Transaction], *, requested_by: str, now) -> None:
    """Commit these transactions as one group. Caller holds their rows."""
    ids = [m.id for m in members]
    for manager in resource_managers():
        manager.resources_commit(transaction_ids=ids, marks={mark for m in members for mark in m.marks})
    events = []
    for member in members:
        events.append(journal_event(JournalKind.COMMIT, broker=member.broker, transaction_id=member.id, at=now))
        if member.id != requested_by:
            events.append(
                journal_event(
                    JournalKind.RELEASE,
                    broker=member.broker,
                    transaction_id=member.id,
                    by=requested_by,
                    at=now,
                )
            )
    journal_record(events=events)  # first: on PostgreSQL it travels with the UPDATE (queries.deferred)
    queries.transactions_resolve(transaction_ids=ids, state=TransactionState.COMMITTED, resolved_at=now)
    woken = set(ids)
    if _linked(*members):  # ready-checks of their consumers are waiting for exactly this
        woken.update(queries.links_downstream_ids(upstream_ids=ids))
    wakeup_notify_on_commit(f"txn:{i}" for i in woken)


def engine_called(transaction_id: str | None, call):
    """``call()``, a step that calls an engine function (a put's ``baton_put_v1``; a
    commit's or rollback's, ``_called``), its errors raised as the project's
    (``_engine_error``); ``transaction_id``: the unit of work the call names, if any."""
    try:
        return call()
    except DatabaseError as exc:
        error = _engine_error(exc, transaction_id)
        if error is None:
            raise
        raise error from exc


def _called(transaction_id: str, call: tuple[str, list] | None, *, durable: bool) -> tuple[str, Transaction | None]:
    """One call of an engine function (``dialect().commit_call``, ``rollback_call``; None:
    the database has none) in an engine step of its own, sent with the step's ``BEGIN`` and
    ``COMMIT`` when the step is outermost (it runs at once inside a caller's transaction):
    ``(outcome, row)``, ``managers`` with no row when there is no function. Its wake-up keys
    are ``NOTIFY``ed by the function on the bus's channel when there is one (delivered at
    commit), else published after the commit; this process's waiters are woken after it. Its
    errors are raised as the project's (``engine_called``)."""
    if call is None:
        return "managers", None
    sql, params = call
    outermost = engine_step_outermost()
    channel = wakeup_bus().channel_in_transaction if outermost else None
    rows: list = []

    def step() -> None:
        with engine_step(durable=durable):
            queries.deferred(sql, [*params, channel], rows=rows)

    engine_called(transaction_id, step)
    outcome, keys, *row = rows[0]
    if outcome == "done":
        if outermost:
            wakeup_notify_committed(list(keys), published=channel is not None)
        else:
            wakeup_notify_on_commit(keys)
    return outcome, queries.transaction_from_row(row)


def _engine_error(exc: DatabaseError, transaction_id: str | None) -> Exception | None:
    """The project's error for an engine function's error (PostgreSQL: ``ENGINE_ERRORS``), the one
    place they are mapped; None for any other error."""
    meaning = dialect().engine_error(exc)
    if meaning is None:
        return None
    kind, detail, message = meaning
    if kind == "definitions_changed":
        return DefinitionsChanged()
    if kind in ("overdue_holder", "lapsed", "reports"):
        return SettleFirst(kind.removesuffix("_holder"), detail)
    if kind == "queue_in_use":
        facts = json.loads(detail)
        return QueueInUse(
            f"Queue {facts['queue']!r} is open for exclusive input by another consumer.",
            broker=facts["broker"],
            queue=facts["queue"],
        )
    if kind == "queue_full":
        facts = json.loads(detail)
        return QueueFull(
            f"Queue {facts['queue']!r} is full (max depth {facts['max_depth']}).",
            broker=facts["broker"],
            queue=facts["queue"],
            max_depth=facts["max_depth"],
        )
    if kind == "not_active":
        return TransactionNotActive(message, transaction=transaction_id, **({"state": detail} if detail else {}))
    if kind == "not_found":
        return TransactionNotFound(f"No transaction {transaction_id}.", transaction=transaction_id)
    if kind == "backed_out":
        return TransactionBackedOut(
            f"Transaction {transaction_id} was rolled back: {detail or 'rolled back'}.",
            transaction=transaction_id,
            reason=detail,
        )
    if kind == "overdue":
        return TransactionOverdue(transaction_id)
    return TransactionNotActive(
        f"Transaction {transaction_id} has already committed.",
        transaction=transaction_id,
        state=TransactionState.COMMITTED,
    )


def _commit_called(transaction_id: str) -> CommitOutcome | None:
    """The commit as one call of the database's own function (``dialect().commit_call``): the
    outcome, or None when it changed nothing and the managers must act (``_commit_step``)."""
    outcome, txn = _called(
        transaction_id, dialect().commit_call(transaction_id=transaction_id, now=timezone.now()), durable=True
    )
    return None if outcome == "managers" else CommitOutcome(txn)


def transaction_commit(
    *, transaction_id: str, wait: float = 0, first: Callable[[Transaction], None] | None = None
) -> CommitOutcome:
    """Commit a unit of work. If an upstream transaction has not committed yet, the commit is
    held (state ``commit_held``) and happens by itself, in the same database transaction as
    the last upstream's commit; this call waits up to ``wait`` seconds for that.

    ``first``: the last work of the unit of work, done in the commit's own database
    transaction (a resource manager's operation, called with the unit of work's row locked,
    before its state is looked at: ``transaction_for_operation`` checks it): if it raises,
    nothing of it is written and the unit of work stays as it was.

    Raises TransactionBackedOut if it was, or while waiting becomes, rolled back.

    On PostgreSQL the commit is one call of ``baton_commit_v1``; only for a unit of work
    with marks or links (the call changed nothing) or with ``first`` do the manager's
    statements and its resource managers do it (``_commit_step``), the message store's part
    there one call of ``baton_messages_commit_v1``. On SQLite: always ``_commit_step``."""
    while True:
        try:
            with transaction_timeouts_applied():
                outcome = _commit_called(transaction_id) if first is None else None
                if outcome is None:
                    outcome = _commit_step(transaction_id, first)
            break
        except _UpstreamSettled:
            continue
    if outcome.state == TransactionState.COMMITTED or wait <= 0:
        return outcome

    def resolved() -> Transaction | None:
        txn = Transaction.objects.get(pk=transaction_id)
        return txn if txn.state in (TransactionState.COMMITTED, TransactionState.ROLLED_BACK) else None

    txn = wait_for(resolved, keys=[f"txn:{transaction_id}"], wait_s=wait)
    if txn is None:
        return CommitOutcome(
            Transaction.objects.get(pk=transaction_id), transaction_waiting_on(transaction_id=transaction_id)
        )
    if txn.state == TransactionState.ROLLED_BACK:
        raise _backed_out(txn)
    return CommitOutcome(txn)


# --- rollback ---------------------------------------------------------------------------


def _rollback_one(txn: Transaction, *, reason: str, cause_id: str | None, now) -> None:
    for manager in resource_managers():
        manager.resources_rollback(transaction_id=txn.id, reason=reason, marks=set(txn.marks))
    queries.transactions_resolve(
        transaction_ids=[txn.id], state=TransactionState.ROLLED_BACK, resolved_at=now, reason=reason, cause_id=cause_id
    )
    txn.state, txn.reason, txn.cause_id, txn.resolved_at = TransactionState.ROLLED_BACK, reason, cause_id, now


def transaction_rollback(*, transaction_id: str, reason: str = "client", require_open: bool = True) -> RollbackOutcome:
    """Roll back a unit of work: its puts vanish, its gets return, and every open
    transaction downstream of it (transitively) is rolled back with reason
    "cascade from <id>". The upstreams of a rolled-back transaction are untouched; the
    links into it are removed, so what it had consumed pre-emptively can be taken again.

    Rolling back a transaction that is already rolled back answers with its state again
    (idempotent); a committed one raises TransactionNotActive.

    On PostgreSQL one call of ``baton_rollback_v1``; for a unit of work with marks or links,
    or gets from a queue with a backout threshold (the call changed nothing), the manager's
    statements and its resource managers do it. On SQLite: always the latter."""
    # not synced: a rollback lost at power failure is done again by restart recovery
    call = dialect().rollback_call(
        transaction_id=transaction_id, reason=reason, now=timezone.now(), require_open=require_open
    )
    outcome, txn = _called(transaction_id, call, durable=False)
    if outcome == "done":
        return RollbackOutcome(txn)
    if outcome == "resolved":
        return RollbackOutcome(txn, rolled_back_now=False)
    # Not synced: a rollback lost at power failure is done again by restart recovery.
    return _under_graph_lock(
        transaction_id, lambda row: _rollback_locked(transaction_id, reason, require_open, row), durable=False
    )


def _rollback_locked(transaction_id: str, reason: str, require_open: bool, row=NOT_READ) -> RollbackOutcome:
    now = timezone.now()
    txn = _locked(transaction_id, row)
    if txn.state == TransactionState.ROLLED_BACK:
        return RollbackOutcome(txn, rolled_back_now=False)
    if txn.state == TransactionState.COMMITTED:
        if not require_open:
            return RollbackOutcome(txn, rolled_back_now=False)
        raise TransactionNotActive(f"Transaction {txn.id} has already committed.", transaction=txn.id, state=txn.state)
    # Collect the downstream cascade first (breadth first), then undo it from the far
    # end back to the root, so each consumer returns what it took before its producer's
    # puts vanish.
    order = [txn]
    seen = {txn.id}
    frontier = [txn.id] if _linked(txn) else []
    while frontier:
        next_ids = [i for i in queries.links_open_downstream_ids(upstream_ids=frontier) if i not in seen]
        frontier = []
        for downstream in queries.transactions_locked(transaction_ids=next_ids, states=OPEN_STATES):
            seen.add(downstream.id)
            order.append(downstream)
            frontier.append(downstream.id)
    cascade_reason = f"cascade from {txn.id}"
    events = []
    for member in reversed(order[1:]):
        _rollback_one(member, reason=cascade_reason, cause_id=txn.id, now=now)
        events.append(
            journal_event(JournalKind.CASCADE, broker=member.broker, transaction_id=member.id, cause=txn.id, at=now)
        )
        events.append(
            journal_event(
                JournalKind.ROLLBACK, broker=member.broker, transaction_id=member.id, reason=cascade_reason, at=now
            )
        )
    _rollback_one(txn, reason=reason, cause_id=None, now=now)
    events.append(journal_event(JournalKind.ROLLBACK, broker=txn.broker, transaction_id=txn.id, reason=reason, at=now))
    # Only links whose downstream rolled back go: the upstream's side is untouched.
    if _linked(*order):
        Link.objects.filter(downstream_id__in=[m.id for m in order]).delete()
    journal_record(events=events)
    wakeup_notify_on_commit(f"txn:{m.id}" for m in order)
    return RollbackOutcome(txn, [m.id for m in order[1:]])


# --- ready-check, waiting-on, timeouts --------------------------------------------------


def transaction_waiting_on(*, transaction_id: str) -> list[str]:
    return sorted(
        Link.objects.filter(downstream_id=transaction_id, upstream__state__in=OPEN_STATES)
        .values_list("upstream_id", flat=True)
        .distinct()
    )


def _check_once(transaction_id: str) -> CheckOutcome:
    txn = queries.transaction_row(transaction_id=transaction_id, lock=False)
    if txn is None:
        raise TransactionNotFound(f"No transaction {transaction_id}.", transaction=transaction_id)
    if txn.state == TransactionState.ROLLED_BACK:
        return CheckOutcome("backed_out", reason=txn.reason)
    waiting_on = queries.open_upstreams(transaction_id=transaction_id) if _linked(txn) else []
    return CheckOutcome("pending", waiting_on) if waiting_on else CheckOutcome("ready")


def transaction_check(*, transaction_id: str, wait: float = 0) -> CheckOutcome:
    """The ready-check: whether every upstream of the transaction has committed (ready) or
    it has been backed out, without committing it. Waits up to ``wait`` seconds while pending."""
    outcome = wait_for(
        lambda: o if (o := _check_once(transaction_id)).result != "pending" else None,
        keys=[f"txn:{transaction_id}"],
        wait_s=wait,
    )
    return outcome or _check_once(transaction_id)


def transactions_time_out(*, limit: int = 500) -> list[str]:
    """Roll back open transactions past their deadline (each cascading downstream).
    Returns the ids it rolled back; the housekeeping task calls it every interval."""
    now = timezone.now()
    overdue = list(
        Transaction.objects.filter(state__in=OPEN_STATES, deadline_at__lte=now)
        .order_by("deadline_at")
        .values_list("pk", flat=True)[:limit]
    )
    rolled_back = []
    for transaction_id in overdue:
        if transaction_rollback(transaction_id=transaction_id, reason="timeout", require_open=False).rolled_back_now:
            rolled_back.append(transaction_id)
    return rolled_back

"""What put, get and browse share: resolving queues, units of work and connections."""

from __future__ import annotations

from dataclasses import dataclass, field

from transactions import queries as transaction_queries
from transactions.exceptions import TransactionNotFound
from transactions.manager import transaction_begin, transaction_for_operation
from transactions.models import Transaction, TransactionState

from ... import permissions as may
from baton_client.errors import GetInhibited, InvalidInput, OptionsConflict, PutInhibited
from ...exceptions import ConnectionNotFound
from ...models import Broker, Connection, Message, Queue, QueueKind
from ...definitions import definitions_checked
from ...definitions import queue_cached as queue_get
from ...selectors import connection_get


@dataclass
class Duplicate:
    """A message a put skipped: its ``dedup_key`` was taken on the queue by ``msg_id``."""

    index: int  # its place in the put's list
    dedup_key: str
    msg_id: str


@dataclass
class PutResult:
    #: The messages put, identified by ``msg_id``; their row ids are not read back (on
    #: PostgreSQL the INSERT travels with the step's COMMIT), so ``pk`` may be None.
    messages: list[Message]
    queue: Queue
    transaction_id: str | None
    duplicates: list[Duplicate] = field(default_factory=list)


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


def queue_put_target(*, broker: str, queue: str) -> _Target:
    """Where a put to ``queue`` lands (an alias's queue, a remote queue's transmission queue),
    or why it may not (unknown, put inhibited, an alias of no local queue): the one resolution
    of puts and of a channel's receiving end. Caller has checked the definitions cache in its
    database transaction."""
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
            raise PutInhibited(
                f"Puts are disabled on transmission queue {xmitq.name!r}.", broker=broker, queue=xmitq.name
            )
        return _Target(named, xmitq, {"broker": named.remote_broker, "queue": named.remote_queue})
    return _Target(named, named)


def _get_source(*, broker: str, queue: str, checked: bool = False, user=None) -> Queue:
    """The local queue a get reads. ``checked``: the caller has just checked the
    definitions cache in its database transaction, or trusts it and compares the version
    before anything it does is kept (else it is checked here). ``user`` (a transport's; None:
    system code): getting through an alias needs get on the queue it stands for too
    (docs/permissions.md), checked against the same definitions as the rest."""
    if not checked:
        definitions_checked()
    named = queue_get(broker=broker, name=queue)
    if user is not None and named.kind != QueueKind.LOCAL:
        may.require_reached(user, "get", broker=broker, queue=queue)
    source = named
    if named.kind == QueueKind.ALIAS:
        source = queue_get(broker=broker, name=named.target_queue)
    if source.kind != QueueKind.LOCAL:
        raise InvalidInput(f"Messages cannot be gotten from {named.kind} queue {queue!r}.", broker=broker, queue=queue)
    if not named.get_enabled or not source.get_enabled:
        raise GetInhibited(f"Gets are disabled on queue {queue!r}.", broker=broker, queue=queue)
    return source


def _user_id(user) -> int | None:
    return getattr(user, "pk", None)


def unit_of_work_joined(*, transaction_id: str, broker: str, user, locked: Transaction | None = None) -> Transaction:
    """The named unit of work, locked, for an operation to add work to: its owner is checked
    (``brokers.permissions.require_transaction_owner``, 404 for anyone else) before its
    state, so a stranger learns nothing about it. ``user`` None is system code."""
    if user is not None:
        if locked is None or locked.id != transaction_id:
            locked = transaction_queries.transaction_row(transaction_id=transaction_id, lock=True)
        if locked is not None:
            may.require_transaction_owner(user, transaction=locked)
    return transaction_for_operation(transaction_id=transaction_id, broker=broker, locked=locked)


def _connection_unit_joined(*, connection: Connection, broker: str, user) -> Transaction:
    """The connection's current unit of work, for a put or get naming the connection. Someone
    else's: the connection is not confirmed to exist (404)."""
    try:
        return unit_of_work_joined(transaction_id=connection.current_transaction_id, broker=broker, user=user)
    except TransactionNotFound:
        raise ConnectionNotFound(f"No open connection {connection.conn_id}.", connection=connection.conn_id) from None


def _unit_of_work(
    *,
    broker: Broker,
    transaction_id: str | None,
    wanted: bool,
    connection: Connection | None,
    new_id: str | None = None,
    locked: Transaction | None = None,
    user=None,
) -> Transaction | None:
    """The unit of work an operation joins: the one named, else (when a syncpoint is wanted)
    the connection's current one, begun if it has none, else a new one, belonging to
    ``user`` (None: system code). Caller holds an open database transaction."""
    if transaction_id:
        return unit_of_work_joined(transaction_id=transaction_id, broker=broker.name, user=user, locked=locked)
    if not wanted:
        return None
    if connection is not None:
        current = connection.current_transaction_id
        if current and Transaction.objects.filter(pk=current, state=TransactionState.ACTIVE).exists():
            return _connection_unit_joined(connection=connection, broker=broker.name, user=user)
    txn = transaction_begin(
        broker=broker.name,
        timeout_ms=broker.transaction_timeout_ms,
        owner=connection.conn_id if connection else "",
        transaction_id=new_id,
        user_id=_user_id(user),
    )
    if connection is not None:
        Connection.objects.filter(pk=connection.pk).update(current_transaction=txn)
    return txn


def _connection(conn_id: str | None, broker: Broker) -> Connection | None:
    if not conn_id:
        return None
    conn = connection_get(conn_id=conn_id)
    if conn.broker_id != broker.pk:
        raise InvalidInput(
            f"Connection {conn_id} is to broker {conn.broker.name!r}, not {broker.name!r}.", connection=conn_id
        )
    return conn


def _syncpoint_checked(syncpoint: str | None, transaction_id: str | None) -> str:
    """The syncpoint a put or get works under (one of yes, no, if_persistent: the operation's
    input checked the choice): the one given, else yes under a named unit of work."""
    if syncpoint is None:
        return "yes" if transaction_id else "no"
    if transaction_id and syncpoint == "no":
        raise OptionsConflict("A put or get under a transaction cannot also ask for no syncpoint.")
    return syncpoint

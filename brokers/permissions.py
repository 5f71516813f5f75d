"""Who may do what through the REST API: every check the views make, in one place.

Actions are ``put``, ``get``, ``browse`` and ``admin``, granted per user (``Grant``) on one
queue of a broker or on the whole broker (every queue of it, and the broker itself).
Superusers may do everything. A refusal is 403 ``permission_denied`` naming the action and
the object. Checks run before the service. Those on brokers and queues look at names only,
so a caller without a grant on a broker learns nothing about what it holds (not even
whether a queue exists); those on transactions, connections and locks look up the broker
or queue they belong to (an unknown id is the service's 404).

=====================================  =========================================================
request                                needs
=====================================  =========================================================
list brokers                           shows the brokers the user holds any grant on
define a broker                        superuser
display a broker                       any action on the broker (broker-wide or on a queue of it)
alter, delete a broker                 admin on the whole broker
list queues                            any action on the broker; shows the queues the user holds
                                       a grant on, or all of them with a broker-wide grant
define a queue                         admin on the whole broker
display a queue                        any action on the queue (queue or broker-wide grant)
alter, delete a queue                  admin on the queue
put                                    put on the queue
get (destructive, browse, peek-lock)   get on the queue
browse (GET .../messages/)             browse on the queue
complete/abandon/renew/dead-letter     get on the locked message's queue
begin a transaction                    put, get or admin on the transaction's broker (broker-wide
                                       or on any queue of it)
display, commit, roll back, check a    its owner (who began it) with put, get or admin on its
transaction; put, get or complete a    broker; a superuser; or admin on its broker (as a whole).
lock under it                          Anyone else: 404 ``not_found``, as for an unknown id
the transaction graph                  any action on the broker (it shows every unit of work
                                       there, but acting on one needs the above)
open, display, close a connection,     put or get on the connection's broker (broker-wide or on
or name one in a put or get            any queue of it); joining its current unit of work is
                                       acting on that unit of work
list channels                          shows the channels whose source broker the user holds any
                                       grant on
display a channel                      any action on its source broker (broker-wide or on a queue
                                       of it); an unknown channel is refused alike
define, alter, start, stop, delete     superuser
channels; deliver batches
=====================================  =========================================================

Ownership of units of work (docs/api.md): a unit of work belongs to the user who began it,
explicitly or by a put or get that began one (``Transaction.user``). Units of work begun by
system code (channel agents, management commands, the dashboard's own puts) belong to no
user: only superusers and the broker's admins may act on them. The service functions that
take a ``user`` (``message_put``, ``message_get``, ``lock_complete``) check the unit of
work they join with :func:`require_transaction_owner` on the row they have locked, so
every transport that passes its user gets the rule; ``user=None`` is system code.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from django.db.models import Q

from config.errors import PermissionDenied
from transactions.exceptions import TransactionNotFound
from transactions.models import Transaction

from .exceptions import ConnectionNotFound
from .models import Channel, Grant, Message, Queue
from .selectors import connection_get

T = TypeVar("T")
ANY = frozenset(Grant.ACTIONS)
TRANSACTION_ACTIONS = frozenset({"put", "get", "admin"})
CONNECTION_ACTIONS = frozenset({"put", "get"})


# --- what a user holds ---------------------------------------------------------------------

def _superuser(user) -> bool:
    return bool(getattr(user, "is_superuser", False))


def _holding(actions: Iterable[str]) -> Q:
    condition = Q(pk__in=[])
    for action in actions:
        condition |= Q(**{f"may_{action}": True})
    return condition


def _holds(user, actions: Iterable[str], *, broker: str, queue: str | None = None, anywhere: bool = False) -> bool:
    """Does the user hold one of ``actions`` on the broker? With a ``queue``: by a grant on
    that queue or a broker-wide one. Without: by a broker-wide grant, or with ``anywhere``
    by a grant on any queue of the broker too."""
    if _superuser(user):
        return True
    grants = Grant.objects.filter(_holding(actions), user=user, broker=broker)
    if queue is not None:
        grants = grants.filter(queue__in=["", queue])
    elif not anywhere:
        grants = grants.filter(queue="")
    return grants.exists()


def _refuse(actions: Iterable[str], *, broker: str, queue: str | None = None, anywhere: bool = False) -> None:
    wanted = sorted(actions, key=Grant.ACTIONS.index)
    what = wanted[0] if len(wanted) == 1 else f"{', '.join(wanted[:-1])} or {wanted[-1]}"
    if queue is not None:
        where = f"queue {queue!r} of broker {broker!r}"
    elif anywhere:
        where = f"broker {broker!r} (or any queue of it)"
    else:
        where = f"broker {broker!r} as a whole"
    detail: dict = {"actions": wanted, "broker": broker}
    if queue is not None:
        detail["queue"] = queue
    raise PermissionDenied(f"You may not do that: it needs {what} permission on {where}.", **detail)


def _require(user, actions: Iterable[str], *, broker: str, queue: str | None = None, anywhere: bool = False) -> None:
    actions = frozenset(actions)
    if not _holds(user, actions, broker=broker, queue=queue, anywhere=anywhere):
        _refuse(actions, broker=broker, queue=queue, anywhere=anywhere)


# --- brokers and queues --------------------------------------------------------------------

def require_broker_define(user) -> None:
    if not _superuser(user):
        raise PermissionDenied("You may not do that: only a superuser may define a broker.", actions=["admin"])


def require_broker_display(user, *, broker: str) -> None:
    _require(user, ANY, broker=broker, anywhere=True)


def require_broker_admin(user, *, broker: str) -> None:
    """Alter or delete the broker, or define a queue on it."""
    _require(user, {"admin"}, broker=broker)


def require_queue_display(user, *, broker: str, queue: str) -> None:
    _require(user, ANY, broker=broker, queue=queue)


def require_queue_admin(user, *, broker: str, queue: str) -> None:
    _require(user, {"admin"}, broker=broker, queue=queue)


def brokers_visible(user, brokers: Iterable[T]) -> list[T]:
    """The brokers (objects with a ``name``) the user holds any grant on."""
    brokers = list(brokers)
    if _superuser(user):
        return brokers
    names = set(Grant.objects.filter(_holding(ANY), user=user).values_list("broker", flat=True))
    return [b for b in brokers if b.name in names]


def channels_visible(user, channels: Iterable[T]) -> list[T]:
    """The channels (objects with a ``source_broker``) whose source broker the user holds
    any grant on."""
    channels = list(channels)
    if _superuser(user):
        return channels
    names = set(Grant.objects.filter(_holding(ANY), user=user).values_list("broker", flat=True))
    return [c for c in channels if c.source_broker.name in names]


def require_channel_display(user, *, channel: str) -> None:
    """Any action on the channel's source broker. Without a grant an unknown channel is
    refused like a known one, so nothing leaks."""
    if _superuser(user):
        return
    broker = Channel.objects.filter(name=channel).values_list("source_broker__name", flat=True).first()
    if broker is None or not _holds(user, ANY, broker=broker, anywhere=True):
        raise PermissionDenied("You may not do that: displaying a channel needs a grant on its source broker.",
                               actions=sorted(ANY, key=Grant.ACTIONS.index), channel=channel)


def require_channel_operate(user) -> None:
    """Define, alter, start, stop or delete a channel, or deliver batches to this platform."""
    if not _superuser(user):
        raise PermissionDenied("You may not do that: only a superuser may manage channels or deliver batches.",
                               actions=["admin"])


def queues_visible(user, *, broker: str, queues: Iterable[Queue]) -> list[Queue]:
    """The broker's queues the user holds a grant on (all of them with a broker-wide grant).
    The view first checks that the user may see the broker (require_broker_display)."""
    queues = list(queues)
    if _superuser(user):
        return queues
    names = set(Grant.objects.filter(_holding(ANY), user=user, broker=broker).values_list("queue", flat=True))
    return queues if "" in names else [q for q in queues if q.name in names]


# --- messages ------------------------------------------------------------------------------

def require_put(user, *, broker: str, queue: str) -> None:
    _require(user, {"put"}, broker=broker, queue=queue)


def require_get(user, *, broker: str, queue: str) -> None:
    _require(user, {"get"}, broker=broker, queue=queue)


def require_browse(user, *, broker: str, queue: str) -> None:
    _require(user, {"browse"}, broker=broker, queue=queue)


def require_lock(user, *, token: str) -> None:
    """Settle a peek-lock: get on the queue the locked message is on (or was, for a lock
    that lapsed). An unknown token is left to the service (404)."""
    if _superuser(user):
        return
    where = (Message.objects.filter(Q(lock_token=token) | Q(lapsed_lock_token=token))
             .values_list("queue__broker__name", "queue__name").first())
    if where is not None:
        require_get(user, broker=where[0], queue=where[1])


# --- transactions and connections ----------------------------------------------------------

def require_transaction_begin(user, *, broker: str) -> None:
    """Begin a unit of work on the broker, or see its transaction graph."""
    _require(user, TRANSACTION_ACTIONS, broker=broker, anywhere=True)


def require_transaction_graph(user, *, broker: str) -> None:
    """See the broker's transaction graph: any action on the broker."""
    _require(user, ANY, broker=broker, anywhere=True)


def _not_found(transaction_id: str) -> TransactionNotFound:
    # the same answer as for an id that does not exist: nothing is confirmed
    return TransactionNotFound(f"No transaction {transaction_id}.", transaction=transaction_id)


def _acts_on(user, *, transaction_id: str, broker: str, user_id: int | None, owner_checked: bool = False) -> None:
    """The ownership rule for a unit of work known to exist. ``owner_checked``: the caller
    has checked the operation's own permission on the broker (a put or get), which covers
    its owner."""
    if user_id is not None and user_id == getattr(user, "pk", None):
        if not owner_checked:
            require_transaction_begin(user, broker=broker)  # its owner, while they may still work on the broker
    elif not _holds(user, {"admin"}, broker=broker):
        raise _not_found(transaction_id)


def require_transaction(user, *, transaction_id: str) -> None:
    """Display, commit, roll back or check a unit of work: its owner (with put, get or
    admin on its broker), a superuser, or a user with admin on its broker; anyone else gets
    404 ``not_found``. An unknown id is left to the service (404)."""
    if _superuser(user):
        return
    row = Transaction.objects.filter(pk=transaction_id).values_list("broker", "user_id").first()
    if row is not None:
        _acts_on(user, transaction_id=transaction_id, broker=row[0], user_id=row[1])


def transaction_graph_for(user, graph: dict) -> dict:
    """A transaction graph (``transactions.selectors.transaction_graph``) as the user may see
    it: nodes on brokers they hold any grant on (a linked unit of work on another broker is
    left out, with its links), each with ``yours``: whether they may act on it."""
    nodes = graph["nodes"]
    if not _superuser(user):
        seen = set(Grant.objects.filter(_holding(ANY), user=user).values_list("broker", flat=True))
        nodes = [n for n in nodes if n["broker"] in seen]
    administered = None if _superuser(user) else set(
        Grant.objects.filter(user=user, queue="", may_admin=True).values_list("broker", flat=True))
    owners = dict(Transaction.objects.filter(pk__in=[n["id"] for n in nodes]).values_list("id", "user_id"))
    me = getattr(user, "pk", None)
    nodes = [{**n, "yours": administered is None or n["broker"] in administered
              or (owners.get(n["id"]) is not None and owners.get(n["id"]) == me)} for n in nodes]
    ids = {n["id"] for n in nodes}
    edges = [e for e in graph["edges"] if e["upstream"] in ids and e["downstream"] in ids]
    return {**graph, "nodes": nodes, "edges": edges}


def require_transaction_owner(user, *, transaction: Transaction) -> None:
    """The service layer's check before it adds work to (or commits) a unit of work whose row
    it has read: the rule of :func:`require_transaction`, without a query when the user owns
    it (the operation's own permission was checked first). ``user`` None is system code."""
    if user is None or _superuser(user):
        return
    _acts_on(user, transaction_id=transaction.pk, broker=transaction.broker, user_id=transaction.user_id,
             owner_checked=True)


def require_connection_open(user, *, broker: str) -> None:
    _require(user, CONNECTION_ACTIONS, broker=broker, anywhere=True)


def require_connection(user, *, conn_id: str) -> None:
    """Display or close a connection: as for opening one on its broker; and when it has an
    open unit of work (which closing it rolls back), as for acting on that unit of work,
    else the connection is not confirmed to exist (404)."""
    if _superuser(user):
        return
    conn = connection_get(conn_id=conn_id)
    require_connection_open(user, broker=conn.broker.name)
    current = conn.current_transaction_id and Transaction.objects.filter(
        pk=conn.current_transaction_id, state__in=["active", "commit_held"]).values_list("broker", "user_id").first()
    if current:
        try:
            _acts_on(user, transaction_id=conn.current_transaction_id, broker=current[0], user_id=current[1],
                     owner_checked=True)
        except TransactionNotFound:
            raise ConnectionNotFound(f"No open connection {conn_id}.", connection=conn_id) from None


def require_connection_use(user, *, conn_id: str | None) -> None:
    """A put or get that names a connection: as for displaying it. (A get with
    ``commit_first`` commits the connection's unit of work before anything else is checked.)"""
    if conn_id:
        require_connection(user, conn_id=conn_id)

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
open a connection                      put or get on the broker (broker-wide or on any queue of it)
display, close a connection, or name   its owner (who opened it) with put or get on its broker; a
one in a put or get                    superuser; or admin on its broker (as a whole). Anyone else:
                                       404; joining its current unit of work is acting on it
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

from baton_client.errors import PermissionDenied
from transactions.exceptions import TransactionNotFound
from transactions.models import Transaction

from .exceptions import ConnectionNotFound
from .models import Broker, Channel, Grant, Message, MessageType, Queue, QueueKind
from .selectors import connection_get

T = TypeVar("T")
#: the actions on a broker's objects; ``monitor`` is not one (it shows figures, not objects)
ANY = frozenset(Grant.ACTIONS) - {"monitor"}
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


def monitored_brokers(user) -> frozenset[str] | None:
    """The brokers whose figures the user may scrape (``/metrics``): None for a superuser
    (every broker, and the platform's own figures), else those the user holds ``monitor``
    on; refused when there are none."""
    if _superuser(user):
        return None
    names = frozenset(Grant.objects.filter(user=user, queue="", may_monitor=True).values_list("broker", flat=True))
    if not names:
        raise PermissionDenied(
            "You may not do that: scraping metrics needs a superuser or monitor permission on a broker.",
            actions=["monitor"],
        )
    return names


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
        raise PermissionDenied(
            "You may not do that: displaying a channel needs a grant on its source broker.",
            actions=sorted(ANY, key=Grant.ACTIONS.index),
            channel=channel,
        )


def require_channel_operate(user) -> None:
    """Define, alter, start, stop or delete a channel, or deliver batches to this platform."""
    if not _superuser(user):
        raise PermissionDenied(
            "You may not do that: only a superuser may manage channels or deliver batches.", actions=["admin"]
        )


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
    that lapsed). An unknown token is left to the service (404). The refusal names the
    broker and queue only to a caller who may see that queue (any grant on it)."""
    require_locks(user, tokens=[token])


def require_locks(user, *, tokens: list[str]) -> None:
    """:func:`require_lock` for several tokens, with one look-up of the queues they are on."""
    if _superuser(user):
        return
    where = set(
        Message.objects.filter(Q(lock_token__in=tokens) | Q(lapsed_lock_token__in=tokens))
        .values_list("queue__broker__name", "queue__name")
        .distinct()
    )
    for broker, queue in sorted(where):
        if _holds(user, {"get"}, broker=broker, queue=queue):
            continue
        if _holds(user, ANY, broker=broker, queue=queue):
            _refuse({"get"}, broker=broker, queue=queue)
        raise PermissionDenied(
            "You may not do that: settling this lock needs get permission on the queue its message is on.",
            actions=["get"],
        )


# --- indirect paths: aliases, remote queues, reports ---------------------------------------
#
# The one rule (docs/permissions.md, "Indirect paths"): a put or get that reaches a queue
# through another name (an alias, a remote queue, a report's or a reply's reply-to queue, a
# channel, a workflow step, a STOMP destination) needs the same right on the queue it
# finally reaches as a direct call would; defining or altering a queue into an alias or a
# remote queue needs admin on the queue it finally reaches. Transports call these with
# their authenticated user; ``user=None`` is system code (channel agents, commands).

#: Most names followed from one queue to the next (aliases and remote queues); a longer
#: chain, or a loop, ends where the following stopped.
MAX_HOPS = 8


def _next_hop(
    broker: str, kind: str, target_queue: str, remote_broker: str, remote_queue: str, transmission_queue: str, name: str
) -> tuple[str, str] | None:
    """Where a queue of this definition leads, or None for a local queue. A remote queue
    leads to its remote queue when its broker is on this platform, else to its transmission
    queue: the last queue on this platform the message reaches."""
    if kind == QueueKind.ALIAS:
        return broker, target_queue
    if kind == QueueKind.REMOTE:
        if Broker.objects.filter(name=remote_broker).exists():
            return remote_broker, remote_queue or name
        return broker, transmission_queue or remote_broker
    return None


def route_end(*, broker: str, queue: str) -> tuple[str, str]:
    """The queue (broker, name) that a put or get on ``broker``/``queue`` finally reaches,
    following aliases and remote queues (at most MAX_HOPS). An unknown queue is its own end."""
    at, seen = (broker, queue), {(broker, queue)}
    for _ in range(MAX_HOPS):
        row = (
            Queue.objects.filter(broker__name=at[0], name=at[1])
            .values_list("kind", "target_queue", "remote_broker", "remote_queue", "transmission_queue")
            .first()
        )
        if row is None:
            break
        hop = _next_hop(at[0], *row, name=at[1])
        if hop is None or hop in seen:
            break
        seen.add(hop)
        at = hop
    return at


def _refuse_reached(user, action: str, *, through: str, end: tuple[str, str]) -> None:
    """The refusal names the queue reached only to a user who may see it (any grant on it)."""
    if _holds(user, ANY, broker=end[0], queue=end[1]):
        raise PermissionDenied(
            f"You may not do that: {through} leads to queue {end[1]!r} of broker {end[0]!r}, which needs "
            f"{action} permission there too.",
            actions=[action],
            broker=end[0],
            queue=end[1],
        )
    raise PermissionDenied(
        f"You may not do that: {through} leads to a queue where it needs {action} permission too.", actions=[action]
    )


def require_reached(user, action: str, *, broker: str, queue: str) -> None:
    """A put or get (``action``) on ``broker``/``queue``, where that queue is not local:
    ``action`` on the queue it finally reaches too. The caller has checked the named queue."""
    if user is None or _superuser(user):
        return
    end = route_end(broker=broker, queue=queue)
    if end != (broker, queue) and not _holds(user, {action}, broker=end[0], queue=end[1]):
        _refuse_reached(user, action, through=f"queue {queue!r}", end=end)


def require_route_defined(user, *, broker: str, queue: str, through: str) -> None:
    """Defining something whose messages Baton puts later on ``broker``/``queue`` on the
    definer's behalf (a subscription's copies, a workflow's step and compensation requests):
    when that queue is not local, put or admin on the queue it finally reaches (admin there
    is what making the alias or remote queue itself would need). The route of every later
    put is then one its definer may use; changing the route later is ``require_queue_route``'s."""
    if user is None or _superuser(user):
        return
    end = route_end(broker=broker, queue=queue)
    if end != (broker, queue) and not _holds(user, {"put", "admin"}, broker=end[0], queue=end[1]):
        _refuse_reached(user, "put", through=through, end=end)


def require_queue_route(user, *, queue: Queue) -> None:
    """Defining or altering ``queue`` (not yet saved) into an alias or a remote queue: admin
    on the queue it finally reaches."""
    if user is None or _superuser(user):
        return
    broker = queue.broker.name
    hop = _next_hop(
        broker,
        queue.kind,
        queue.target_queue,
        queue.remote_broker,
        queue.remote_queue,
        queue.transmission_queue,
        name=queue.name,
    )
    if hop is None:
        return
    end = route_end(broker=hop[0], queue=hop[1])
    if not _holds(user, {"admin"}, broker=end[0], queue=end[1]):
        _refuse_reached(user, "admin", through=f"{queue.kind} queue {queue.name!r}", end=end)


def report_route_end(*, broker: str, reply_to_broker: str, reply_to_queue: str) -> tuple[str, str]:
    """The queue a report (or a reply) about a message put on ``broker`` finally reaches:
    the reply-to queue on this broker or on another broker of this platform (followed as
    :func:`route_end`), else the transmission queue named after the reply-to broker."""
    to_broker = reply_to_broker or broker
    if to_broker != broker and not Broker.objects.filter(name=to_broker).exists():
        return broker, to_broker
    return route_end(broker=to_broker, queue=reply_to_queue)


def may_put_reports(user, *, broker: str, reply_to_broker: str, reply_to_queue: str) -> bool:
    """Whether reports asked for by ``user``'s put on ``broker`` may go to the reply-to queue:
    put permission on the queue they finally reach."""
    if user is None or _superuser(user):
        return True
    end = report_route_end(broker=broker, reply_to_broker=reply_to_broker, reply_to_queue=reply_to_queue)
    return _holds(user, {"put"}, broker=end[0], queue=end[1])


def require_reports(user, *, broker: str, reply_to_broker: str, reply_to_queue: str) -> None:
    """A put asking for reports: put permission where the reports would finally go."""
    if not may_put_reports(user, broker=broker, reply_to_broker=reply_to_broker, reply_to_queue=reply_to_queue):
        raise PermissionDenied(
            "You may not do that: the reports asked for would go to the reply-to queue, which needs put "
            "permission where they finally arrive.",
            actions=["put"],
        )


def require_put_fields(user, *, broker: str, messages) -> None:
    """What a put's messages ask for beyond their queue, checked as ``user``'s put on
    ``broker`` (``MessageInput``s): ``msg_type`` report needs the set-context permission;
    reports go only where the user may put (each distinct reply-to destination once). The
    put service calls it for every put with a user, and so does whatever records a message
    that Baton puts later on a user's behalf (a workflow step's compensation input)."""
    if user is None:
        return
    if any(m.msg_type == MessageType.REPORT for m in messages):
        require_set_context(user, field="msg_type")  # reports are Baton's own
    seen: set[tuple[str, str]] = set()
    for msg in messages:
        where = (msg.reply_to_broker, msg.reply_to_queue)
        if msg.report and msg.reply_to_queue and where not in seen:
            seen.add(where)
            require_reports(user, broker=broker, reply_to_broker=where[0], reply_to_queue=where[1])


# --- context fields ------------------------------------------------------------------------

#: The Django permission that lets a user set a message's context (``put_application``,
#: ``msg_type`` report) as MQ's set-all-context authority does.
SET_CONTEXT = "brokers.set_context"


def may_set_context(user) -> bool:
    return user is None or _superuser(user) or bool(getattr(user, "has_perm", None) and user.has_perm(SET_CONTEXT))


def require_set_context(user, *, field: str) -> None:
    if not may_set_context(user):
        raise PermissionDenied(
            f"You may not set {field}: it needs the set-context permission ({SET_CONTEXT}).",
            actions=["set_context"],
            field=field,
        )


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
    administered = (
        None
        if _superuser(user)
        else set(Grant.objects.filter(user=user, queue="", may_admin=True).values_list("broker", flat=True))
    )
    owners = dict(Transaction.objects.filter(pk__in=[n["id"] for n in nodes]).values_list("id", "user_id"))
    me = getattr(user, "pk", None)
    nodes = [
        {
            **n,
            "yours": administered is None
            or n["broker"] in administered
            or (owners.get(n["id"]) is not None and owners.get(n["id"]) == me),
        }
        for n in nodes
    ]
    ids = {n["id"] for n in nodes}
    edges = [e for e in graph["edges"] if e["upstream"] in ids and e["downstream"] in ids]
    return {**graph, "nodes": nodes, "edges": edges}


def require_transaction_owner(user, *, transaction: Transaction) -> None:
    """The service layer's check before it adds work to (or commits) a unit of work whose row
    it has read: the rule of :func:`require_transaction`, without a query when the user owns
    it (the operation's own permission was checked first). ``user`` None is system code."""
    if user is None or _superuser(user):
        return
    _acts_on(
        user, transaction_id=transaction.pk, broker=transaction.broker, user_id=transaction.user_id, owner_checked=True
    )


def require_connection_open(user, *, broker: str) -> None:
    _require(user, CONNECTION_ACTIONS, broker=broker, anywhere=True)


def require_connection(user, *, conn_id: str) -> None:
    """Display or close a connection, or name it in a put or get: a connection belongs to
    the user who opened it, as a unit of work does. Its owner (while they may still open
    one on its broker), a superuser, or a user with admin on its broker as a whole; anyone
    else gets 404, as for an unknown id. And when it has an open unit of work (which closing
    it rolls back), as for acting on that unit of work, else 404 too."""
    if _superuser(user):
        return
    conn = connection_get(conn_id=conn_id)
    if conn.user_id is None or conn.user_id != getattr(user, "pk", None):
        if not _holds(user, {"admin"}, broker=conn.broker.name):
            raise ConnectionNotFound(f"No open connection {conn_id}.", connection=conn_id)
    else:
        require_connection_open(user, broker=conn.broker.name)
    current = (
        conn.current_transaction_id
        and Transaction.objects.filter(pk=conn.current_transaction_id, state__in=["active", "commit_held"])
        .values_list("broker", "user_id")
        .first()
    )
    if current:
        try:
            _acts_on(
                user,
                transaction_id=conn.current_transaction_id,
                broker=current[0],
                user_id=current[1],
                owner_checked=True,
            )
        except TransactionNotFound:
            raise ConnectionNotFound(f"No open connection {conn_id}.", connection=conn_id) from None


def require_stomp_client_close(user, *, session: str) -> None:
    """Close a STOMP connection: its own user, a superuser, or a user with admin on its
    broker as a whole (as for closing a connection); anyone else gets 404, as for an unknown
    session."""
    from stomp_server.models import StompClient

    from .exceptions import StompConnectionNotFound

    row = StompClient.objects.filter(session=session).values_list("broker", "username").first()
    if row is not None and (
        _superuser(user) or row[1] == getattr(user, "username", None) or _holds(user, {"admin"}, broker=row[0])
    ):
        return
    raise StompConnectionNotFound(f"No STOMP connection {session}.", session=session)


def require_connection_use(user, *, conn_id: str | None) -> None:
    """A put or get that names a connection: as for displaying it. (A get with
    ``commit_first`` commits the connection's unit of work before anything else is checked.)"""
    if conn_id:
        require_connection(user, conn_id=conn_id)

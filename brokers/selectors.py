"""Reads: brokers, queues, depths, connections."""

from __future__ import annotations

from django.db.models import Count, Q, QuerySet

from . import queries
from .exceptions import BrokerNotFound, ConnectionNotFound, QueueNotFound
from .models import Broker, ClientSession, Connection, Message, Queue, put_committed_q, put_open_flag, put_open_q


def broker_get(*, name: str) -> Broker:
    try:
        return Broker.objects.get(name=name)
    except Broker.DoesNotExist as exc:
        raise BrokerNotFound(f"No broker named {name!r}.", broker=name) from exc


def broker_list() -> QuerySet[Broker]:
    return Broker.objects.order_by("name")


def queue_get(*, broker: str, name: str) -> Queue:
    try:
        return Queue.objects.select_related("broker").get(broker__name=broker, name=name)
    except Queue.DoesNotExist as exc:
        broker_get(name=broker)  # a missing broker is the better error
        raise QueueNotFound(f"No queue {name!r} on broker {broker!r}.", broker=broker, queue=name) from exc


def queue_list(*, broker: str) -> QuerySet[Queue]:
    return Queue.objects.filter(broker=broker_get(name=broker)).select_related("broker").order_by("name")


def queue_depths(*, queue_ids: list[int]) -> dict[int, dict[str, int]]:
    """Per queue: ``depth`` (committed messages, available or in flight), ``uncommitted_puts``,
    ``in_flight`` and ``locked``."""
    rows = (
        Message.objects.filter(queue_id__in=queue_ids)
        .values("queue_id")
        .annotate(
            depth=Count("id", filter=put_committed_q()),
            uncommitted_puts=Count("id", filter=put_open_q()),
            in_flight=Count("id", filter=Q(get_transaction__isnull=False)),
            locked=Count("id", filter=Q(lock_token__isnull=False, get_transaction__isnull=True)),
        )
    )
    depths = {qid: {"depth": 0, "uncommitted_puts": 0, "in_flight": 0, "locked": 0} for qid in queue_ids}
    for row in rows:
        depths[row["queue_id"]].update(
            depth=row["depth"],
            uncommitted_puts=row["uncommitted_puts"],
            in_flight=row["in_flight"],
            locked=row["locked"],
        )
    return depths


def connection_get(*, conn_id: str) -> Connection:
    try:
        return Connection.objects.select_related("broker").get(conn_id=conn_id, closed_at__isnull=True)
    except Connection.DoesNotExist as exc:
        raise ConnectionNotFound(f"No open connection {conn_id}.", connection=conn_id) from exc


def client_session_get(*, broker: Broker, client_name: str, user_id: int | None) -> ClientSession | None:
    """What ``user_id``'s (None: system code's) client of that name on the broker remembers."""
    return ClientSession.objects.filter(broker=broker, client_name=client_name, user_id=user_id).first()


def queue_next_release(*, queue_id: int, now):
    """When, after ``now``, a message of the queue next becomes available with no commit to
    announce it: the earliest end of a peek-lock on it, or of the deadline of an open unit
    of work holding one of its messages (a waiting get looks again then). None if neither.
    No lock. One statement (``queries.queue_next_release``): a waiting get asks after every
    look that found nothing."""
    return queries.queue_next_release(queue_id=queue_id, now=now)


def messages_where(*, broker: str, queues: list[str], msg_ids: list[str]) -> dict[str, dict]:
    """Where these messages, put on these queues of the broker, are now (read only; for
    programs that follow requests they put, such as workflows): by msg_id, ``queue`` (its
    name), ``get_transaction`` (the unit of work that has it in flight, or None),
    ``put_transaction`` (None once committed), ``backout_count``, ``backout_threshold`` (of
    its queue), ``locked`` and ``dead_letter_from``. Messages no longer on those queues are
    absent."""
    if not msg_ids:
        return {}
    rows = (
        Message.objects.filter(
            queue__broker__name=broker, queue__name__in=sorted(set(queues)), msg_id__in=list(msg_ids)
        )
        .annotate(put_open=put_open_flag())
        .values_list(
            "msg_id",
            "queue__name",
            "get_transaction_id",
            "put_transaction_id",
            "put_open",
            "backout_count",
            "queue__backout_threshold",
            "lock_token",
            "dead_letter_queue",
        )
    )
    return {
        m: {
            "queue": q,
            "get_transaction": g,
            "put_transaction": p if open_ else None,
            "backout_count": b,
            "backout_threshold": t,
            "locked": lock is not None,
            "dead_letter_from": d or None,
        }
        for m, q, g, p, open_, b, t, lock, d in rows
    }


def messages_gotten(*, transaction_id: str, msg_ids: list[str] | None = None) -> list[dict]:
    """Which messages (of ``msg_ids``, or all) the unit of work has in flight (a get under
    it), with ``msg_id``, ``backout_count``, ``backout_threshold`` (of its queue) and
    ``locked`` (a peek-locked message completed under it: a rollback gives it back to its
    lock)."""
    if msg_ids is not None and not msg_ids:
        return []
    rows = Message.objects.filter(get_transaction_id=transaction_id)
    if msg_ids is not None:
        rows = rows.filter(msg_id__in=list(msg_ids))
    rows = rows.values_list("msg_id", "backout_count", "queue__backout_threshold", "lock_token")
    return [
        {"msg_id": m, "backout_count": b, "backout_threshold": t, "locked": lock is not None} for m, b, t, lock in rows
    ]


def queue_reserved_depth(*, queue: Queue) -> int:
    """The room a queue holds: its messages, uncommitted puts included (``reserved_depth``
    less the releases not yet folded into it, ``QueueRelease``)."""
    return queries.queue_reserved(queue_id=queue.pk)

"""Defining, altering and deleting queues."""

from __future__ import annotations

from django.db import IntegrityError, transaction as db

from .. import permissions as may
from baton_client.errors import AlreadyExists, InvalidInput, NotEmpty
from ..models import Message, Queue, QueueKind, QueueUsage, put_open_q
from ..selectors import broker_get, queue_get

QUEUE_FIELDS = {
    "kind",
    "usage",
    "description",
    "max_depth",
    "max_message_length",
    "put_enabled",
    "get_enabled",
    "default_priority",
    "default_persistence",
    "delivery_sequence",
    "read_order",
    "enforce_order",
    "backout_threshold",
    "backout_queue",
    "lock_duration_ms",
    "default_access",
    "remote_broker",
    "remote_queue",
    "transmission_queue",
    "target_queue",
    "depth_high_pct",
    "depth_low_pct",
    "service_interval_ms",
}
#: The attributes only a queue of that kind has; any other kind leaves them empty.
KIND_FIELDS = {
    QueueKind.LOCAL: set(),
    QueueKind.REMOTE: {"remote_broker", "remote_queue", "transmission_queue"},
    QueueKind.ALIAS: {"target_queue"},
}
ROUTE_FIELDS = set().union(*KIND_FIELDS.values())


def _contradictions(queue: Queue) -> dict[str, list[str]]:
    """The attributes that do not belong to the queue's kind (a definition is checked as a
    whole: what it would be once saved, not only the fields changed)."""
    errors: dict[str, list[str]] = {}
    for name in sorted(ROUTE_FIELDS - KIND_FIELDS.get(queue.kind, set())):
        if getattr(queue, name):
            errors[name] = [f"A {queue.kind} queue has no {name}."]
    if queue.kind != QueueKind.LOCAL and queue.usage == QueueUsage.TRANSMISSION:
        errors["usage"] = ["Only a local queue can be a transmission queue."]
    return errors


def _queue_definition_checked(queue: Queue) -> None:
    """The definition as a whole, as it would be saved (for an alteration, the stored one
    with the changes): its kind's attributes, and the broker's dead-letter queue local."""
    errors: dict[str, list[str]] = _contradictions(queue)
    if queue.kind == QueueKind.REMOTE:
        if not queue.remote_broker:
            errors["remote_broker"] = ["A remote queue names the broker it leads to."]
        if not queue.remote_queue:
            queue.remote_queue = queue.name
        if not queue.transmission_queue:
            queue.transmission_queue = queue.remote_broker  # as IBM MQ: the xmit queue named after the broker
    elif queue.kind == QueueKind.ALIAS:
        if not queue.target_queue:
            errors["target_queue"] = ["An alias names the queue it stands for."]
        elif queue.target_queue == queue.name:
            errors["target_queue"] = ["An alias cannot stand for itself."]
    if queue.name == queue.broker.dead_letter_queue and queue.kind != QueueKind.LOCAL:
        errors["kind"] = ["The dead-letter queue must be a local queue."]
    if queue.depth_high_pct and queue.depth_low_pct and queue.depth_low_pct >= queue.depth_high_pct:
        errors["depth_low_pct"] = [f"Must be below depth_high_pct ({queue.depth_high_pct}), or 0 (off)."]
    if errors:
        raise InvalidInput("The request is not valid.", errors=errors)


def queue_define(*, broker: str, name: str, user=None, **attributes) -> Queue:
    """Define a queue on a broker. Unset attributes take the broker's defaults where it has
    them (maximum message length, persistence). ``user`` (a transport's authenticated user;
    None: system code): an alias or remote queue needs admin where it leads
    (``brokers.permissions.require_queue_route``). ``name`` and ``attributes`` (of
    QUEUE_FIELDS) are valid already: the caller's boundary parsed them through
    ``QueueDefine.Input``."""
    owner = broker_get(name=broker)
    attributes.setdefault("max_message_length", owner.max_message_length)
    attributes.setdefault("default_persistence", owner.default_persistence)
    queue = Queue(broker=owner, name=name, **attributes)
    _queue_definition_checked(queue)
    may.require_queue_route(user, queue=queue)
    try:
        with db.atomic():
            queue.save()
    except IntegrityError as exc:
        raise AlreadyExists(f"Queue {name!r} already exists on broker {broker!r}.", broker=broker, queue=name) from exc
    return queue


def queue_alter(*, broker: str, name: str, user=None, **changes) -> Queue:
    """Alter a queue's definition, checked as a whole: the attributes of the kind it ends
    as (those of its former kind that are not given are cleared; contradicting ones given
    are refused). A queue that holds messages keeps its kind and usage. ``user``: as for
    :func:`queue_define`, when the alteration leaves an alias or remote queue. ``changes``:
    valid already, as parsed by ``QueueAlter.Input``."""
    with db.atomic():
        queue = queue_get(broker=broker, name=name)
        rekinded = "kind" in changes and changes["kind"] != queue.kind
        reused = "usage" in changes and changes["usage"] != queue.usage
        # the read order too: only a commit-ordered queue's messages carry commit sequences
        reordered = "read_order" in changes and changes["read_order"] != queue.read_order
        if (rekinded or reused or reordered) and Message.objects.filter(queue=queue).exists():
            what = "kind" if rekinded else "usage" if reused else "read order"
            raise NotEmpty(f"Queue {name!r} holds messages; its {what} cannot change.", queue=name)
        if rekinded:
            kept = KIND_FIELDS.get(changes["kind"], set())
            for field in ROUTE_FIELDS - kept - set(changes):
                setattr(queue, field, "")
        for key, value in changes.items():
            setattr(queue, key, value)
        _queue_definition_checked(queue)
        if rekinded or ROUTE_FIELDS & set(changes):
            may.require_queue_route(user, queue=queue)
        # Counters are changed only under the row lock; save just the definition.
        queue.save(update_fields=sorted(QUEUE_FIELDS))
    return queue


def queue_delete(*, broker: str, name: str, purge: bool = False) -> None:
    """Delete a queue. Refused for the broker's dead-letter queue, for a queue with messages
    under an open unit of work, and, unless ``purge``, for a queue that holds messages."""
    with db.atomic():
        queue = queue_get(broker=broker, name=name)
        if queue.name == queue.broker.dead_letter_queue:
            raise NotEmpty(f"Queue {name!r} is broker {broker!r}'s dead-letter queue.", queue=name)
        messages = Message.objects.filter(queue=queue)
        if messages.filter(put_open_q()).exists() or messages.filter(get_transaction__isnull=False).exists():
            raise NotEmpty(f"Queue {name!r} has messages under open units of work.", queue=name)
        if not purge and messages.exists():
            raise NotEmpty(f"Queue {name!r} holds messages; delete with purge to discard them.", queue=name)
        queue.delete()

"""Defining, altering and deleting queues."""
from __future__ import annotations

from django.db import IntegrityError, transaction as db

from ..exceptions import AlreadyExists, InvalidInput, NotEmpty
from ..models import Message, Queue, QueueKind
from ..selectors import broker_get, queue_get
from .validation import model_validated, unknown_fields_refused

QUEUE_FIELDS = {
    "kind", "usage", "description", "max_depth", "max_message_length", "put_enabled", "get_enabled",
    "default_priority", "default_persistence", "delivery_sequence", "read_order", "enforce_order",
    "backout_threshold", "backout_queue", "lock_duration_ms", "default_access", "remote_broker",
    "remote_queue", "transmission_queue", "target_queue",
}


def _queue_definition_checked(queue: Queue) -> None:
    model_validated(queue, exclude=["broker"])
    errors: dict[str, list[str]] = {}
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
    if errors:
        raise InvalidInput("The request is not valid.", errors=errors)


def queue_define(*, broker: str, name: str, **attributes) -> Queue:
    """Define a queue on a broker. Unset attributes take the broker's defaults where it has
    them (maximum message length, persistence)."""
    unknown_fields_refused(attributes, QUEUE_FIELDS)
    owner = broker_get(name=broker)
    attributes.setdefault("max_message_length", owner.max_message_length)
    attributes.setdefault("default_persistence", owner.default_persistence)
    queue = Queue(broker=owner, name=name, **attributes)
    _queue_definition_checked(queue)
    try:
        with db.atomic():
            queue.save()
    except IntegrityError as exc:
        raise AlreadyExists(f"Queue {name!r} already exists on broker {broker!r}.", broker=broker, queue=name) from exc
    return queue


def queue_alter(*, broker: str, name: str, **changes) -> Queue:
    unknown_fields_refused(changes, QUEUE_FIELDS)
    with db.atomic():
        queue = queue_get(broker=broker, name=name)
        if "kind" in changes and changes["kind"] != queue.kind:
            if queue.kind == QueueKind.LOCAL and Message.objects.filter(queue=queue).exists():
                raise NotEmpty(f"Queue {name!r} holds messages; its kind cannot change.", queue=name)
        for key, value in changes.items():
            setattr(queue, key, value)
        _queue_definition_checked(queue)
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
        if messages.filter(put_transaction__isnull=False).exists() or messages.filter(get_transaction__isnull=False).exists():
            raise NotEmpty(f"Queue {name!r} has messages under open units of work.", queue=name)
        if not purge and messages.exists():
            raise NotEmpty(f"Queue {name!r} holds messages; delete with purge to discard them.", queue=name)
        queue.delete()

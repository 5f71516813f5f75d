"""Defining, altering and deleting brokers."""

from __future__ import annotations

from django.db import IntegrityError, transaction as db

from transactions.models import OPEN_STATES, Transaction

from baton_client.errors import AlreadyExists, NotEmpty
from ..models import Broker, Message, Queue
from ..selectors import broker_get

BROKER_FIELDS = {
    "description",
    "dead_letter_queue",
    "transaction_timeout_ms",
    "max_message_length",
    "default_persistence",
    "auto_define_queues",
}


def broker_define(*, name: str, **attributes) -> Broker:
    """Define a broker together with its dead-letter queue (a broker always has one: backed
    out and undeliverable messages must have somewhere to go). ``name`` and ``attributes``
    (of BROKER_FIELDS) are valid already: the caller's boundary parsed them through
    ``BrokerDefine.Input``; what is checked here needs the database (the name is free)."""
    broker = Broker(name=name, **attributes)
    try:
        with db.atomic():
            broker.save()
            dlq = Queue(
                broker=broker,
                name=broker.dead_letter_queue,
                description="Dead-letter queue",
                default_persistence=broker.default_persistence,
                max_depth=999_999_999,
            )
            dlq.save()
    except IntegrityError as exc:
        raise AlreadyExists(f"A broker named {name!r} already exists.", broker=name) from exc
    return broker


def broker_alter(*, name: str, **changes) -> Broker:
    """Change a broker's attributes (``changes``: valid already, as parsed by
    ``BrokerAlter.Input``). Naming another dead-letter queue defines it if missing."""
    with db.atomic():
        broker = broker_get(name=name)
        for key, value in changes.items():
            setattr(broker, key, value)
        broker.save()
        if not Queue.objects.filter(broker=broker, name=broker.dead_letter_queue).exists():
            dlq = Queue(
                broker=broker, name=broker.dead_letter_queue, description="Dead-letter queue", max_depth=999_999_999
            )
            dlq.save()
    return broker


def broker_delete(*, name: str, purge: bool = False) -> None:
    """Delete a broker and its queues. Refused while a unit of work on it is open, and,
    unless ``purge``, while any of its queues holds messages: nothing is lost by accident."""
    with db.atomic():
        broker = broker_get(name=name)
        if Transaction.objects.filter(broker=broker.name, state__in=OPEN_STATES).exists():
            raise NotEmpty(f"Broker {name!r} has open units of work; resolve them first.", broker=name)
        if not purge and Message.objects.filter(queue__broker=broker).exists():
            raise NotEmpty(f"Broker {name!r} still holds messages; delete with purge to discard them.", broker=name)
        broker.delete()

"""Putting copies of a publication on subscribers' queues.

Each copy is an ordinary put (brokers.services.messages.message_put) in the caller's
database transaction, under the publisher's unit of work when there is one (so the copies
are its uncommitted puts and pre-emptive gets link to it). A put that fails (full queue,
puts disabled) fails the whole publication when the subscription is durable; a
non-durable subscription is skipped (the put's savepoint is undone, nothing else)."""

from __future__ import annotations

from baton_client.errors import PutInhibited, QueueFull
from brokers.models import Broker
from brokers.services.message_input import MessageInput
from brokers.services.messages import message_put
from transactions import queries as txn_queries

from ..models import RetainedPublication, Subscription
from ..topics import literal_prefix, matches
from ..tree import Subscriber
from .stored import message_copy, message_loaded


def copies_deliver(
    *,
    broker: Broker,
    subscriptions: list[Subscriber],
    topic: str,
    msg: MessageInput,
    msg_id: str,
    transaction_id: str | None,
    is_retained: bool = False,
) -> int:
    """Put one copy on each subscription's queue; return how many were put. Caller holds an
    open database transaction (an engine step)."""
    delivered = 0
    for sub in subscriptions:
        copy = message_copy(msg, topic=topic, subscription=sub.name, is_retained=is_retained, msg_id=msg_id)
        txn_queries.deferred_flush()  # the caller's deferred writes must not ride in the put's savepoint
        try:
            message_put(
                broker=broker.name,
                queue=sub.queue,
                messages=[copy],
                transaction_id=transaction_id,
                put_application="pubsub",
            )
        except (QueueFull, PutInhibited) as exc:
            if sub.durable:
                exc.details.setdefault("subscription", sub.name)
                raise
            continue
        delivered += 1
    return delivered


def retained_deliver(*, broker: Broker, subscription: Subscription) -> int:
    """Send a subscription the retained publications its filter matches (as committed puts,
    ``is_retained`` true)."""
    prefix = literal_prefix(subscription.topic_filter)
    rows = RetainedPublication.objects.filter(broker=broker).order_by("topic")
    if prefix:
        rows = rows.filter(topic__startswith=prefix)
    delivered = 0
    for row in rows:
        if matches(subscription.topic_filter, row.topic):
            delivered += copies_deliver(
                broker=broker,
                subscriptions=[Subscriber.of(subscription)],
                topic=row.topic,
                msg=message_loaded(row.body, row.message),
                msg_id=row.msg_id,
                transaction_id=None,
                is_retained=True,
            )
    return delivered

"""Defining and deleting subscriptions. Each change moves the topic tree version in its
database transaction (pubsub.tree)."""

from __future__ import annotations

from django.db import IntegrityError, transaction as db

from brokers.definitions import broker_cached, definitions_checked
from brokers import permissions as may
from brokers.models import Queue, QueueKind
from baton_client.errors import AlreadyExists, InvalidInput
from transactions.durability import engine_step

from ..exceptions import SubscriptionNotFound
from ..models import Subscription
from ..topics import literal_prefix
from ..tree import tree_for, tree_version_bump
from .delivery import retained_deliver


def subscription_define(
    *,
    broker: str,
    name: str,
    topic_filter: str,
    queue: str,
    durable: bool = True,
    activation_topic: str = "",
    deactivation_topic: str = "",
    new_publications_only: bool = False,
    user=None,
) -> Subscription:
    """Subscribe ``queue`` to the publications matching ``topic_filter``. Active at once
    unless it names an activation topic; an active one receives the retained publications
    its filter matches now, unless ``new_publications_only``. The fields are valid already
    (the caller's boundary parsed them through ``SubscriptionDefine.Input``: a name, a filter
    by the topic grammar, "" for no activation or deactivation topic). Nothing is defined
    when the queue is unknown, the topic object allows no durable subscription (400 naming
    the field), or a durable subscription's queue cannot take a retained publication (409
    ``queue_full``), nor when ``queue`` leads (an alias, a remote queue) to a queue where
    ``user`` may not put (403, docs/permissions.md "Indirect paths"; None: system code).
    The copies are then put by Baton on the definer's behalf without further checks."""
    with engine_step(durable=True):
        definitions_checked()
        owner = broker_cached(name=broker)
        target = Queue.objects.filter(broker=owner, name=queue).first()
        if target is None:
            raise InvalidInput(f"No queue {queue!r} on broker {broker!r}.", errors={"queue": ["No such queue."]})
        if target.kind != QueueKind.LOCAL:
            may.require_route_defined(user, broker=broker, queue=queue, through=f"subscription queue {queue!r}")
        _, durable_allowed = tree_for(broker_id=owner.pk).topic_attributes(literal_prefix(topic_filter))
        if durable and not durable_allowed:
            raise InvalidInput(
                "The topic object administering this filter allows no durable subscriptions.",
                errors={"durable": ["Not allowed here."]},
            )
        sub = Subscription(
            broker=owner,
            name=name,
            topic_filter=topic_filter,
            queue=target,
            durable=durable,
            activation_topic=activation_topic,
            deactivation_topic=deactivation_topic,
            new_publications_only=new_publications_only,
            active=not activation_topic,
        )
        try:
            with db.atomic():
                sub.save()
        except IntegrityError as exc:
            raise AlreadyExists(
                f"Subscription {name!r} already exists on broker {broker!r}.", broker=broker, subscription=name
            ) from exc
        tree_version_bump()
        if sub.active and not new_publications_only:
            retained_deliver(broker=owner, subscription=sub)
    return sub


def subscription_delete(*, broker: str, name: str) -> None:
    """Delete a subscription; what it already delivered stays on its queue."""
    with db.atomic():
        deleted, _ = Subscription.objects.filter(broker__name=broker, name=name).delete()
        if not deleted:
            broker_cached(name=broker)
            raise SubscriptionNotFound(
                f"No subscription {name!r} on broker {broker!r}.", broker=broker, subscription=name
            )
        tree_version_bump()


def subscriptions_nondurable_remove() -> int:
    """What a platform restart does to subscriptions: non-durable ones are removed."""
    with db.atomic():
        removed, _ = Subscription.objects.filter(durable=False).delete()
        if removed:
            tree_version_bump()
    return removed

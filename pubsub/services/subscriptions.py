"""Defining and deleting subscriptions. Each change moves the topic tree version in its
database transaction (pubsub.tree)."""

from __future__ import annotations

import re

from django.db import IntegrityError, transaction as db

from brokers.definitions import broker_cached, definitions_checked
from brokers.models import NAME_PATTERN, Queue
from config.errors import AlreadyExists, InvalidInput
from transactions.durability import engine_step

from ..exceptions import SubscriptionNotFound
from ..models import Subscription
from ..topics import filter_problems, has_wildcards, literal_prefix, topic_problems
from ..tree import tree_for, tree_version_bump
from .delivery import retained_deliver

NAME = re.compile(NAME_PATTERN)


def _checked(
    *, name, topic_filter, queue, durable, activation_topic, deactivation_topic, new_publications_only
) -> dict[str, list[str]]:
    errors: dict[str, list[str]] = {}
    if not isinstance(name, str) or not NAME.match(name):
        errors["name"] = ["Use 1 to 48 characters of A-Z a-z 0-9 . _ / %."]
    if problems := filter_problems(topic_filter):
        errors["topic_filter"] = problems
    if not isinstance(queue, str) or not NAME.match(queue):
        errors["queue"] = ["Name a queue of the broker."]
    for field, value in (("durable", durable), ("new_publications_only", new_publications_only)):
        if not isinstance(value, bool):
            errors[field] = ["Must be a boolean."]
    for field, value in (("activation_topic", activation_topic), ("deactivation_topic", deactivation_topic)):
        if value == "":
            continue
        if isinstance(value, str) and has_wildcards(value):
            errors[field] = ["Must be a topic string, without the wildcards + or #."]
        elif problems := topic_problems(value):
            errors[field] = problems
    if activation_topic and activation_topic == deactivation_topic:
        errors["deactivation_topic"] = ["Must differ from the activation topic."]
    return errors


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
) -> Subscription:
    """Subscribe ``queue`` to the publications matching ``topic_filter``. Active at once
    unless it names an activation topic; an active one receives the retained publications
    its filter matches now, unless ``new_publications_only``. Nothing is defined when any
    field is wrong (400 naming it), the queue is unknown, or a durable subscription's queue
    cannot take a retained publication (409 ``queue_full``)."""
    activation_topic = activation_topic or ""
    deactivation_topic = deactivation_topic or ""
    errors = _checked(
        name=name,
        topic_filter=topic_filter,
        queue=queue,
        durable=durable,
        activation_topic=activation_topic,
        deactivation_topic=deactivation_topic,
        new_publications_only=new_publications_only,
    )
    if errors:
        raise InvalidInput("The subscription is not valid.", errors=errors)
    with engine_step(durable=True):
        definitions_checked()
        owner = broker_cached(name=broker)
        target = Queue.objects.filter(broker=owner, name=queue).first()
        if target is None:
            raise InvalidInput(f"No queue {queue!r} on broker {broker!r}.", errors={"queue": ["No such queue."]})
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

"""A publication's effects on topics: replacing its topic's retained publication, and
switching on or off the subscriptions that name it as their activation or deactivation
topic. Outside a unit of work they happen with the publication; under one, when it
commits (pubsub.services.store)."""

from __future__ import annotations

import logging
from datetime import datetime

from django.db import IntegrityError, transaction as db

from brokers.models import Broker
from brokers.services.message_input import MessageInput
from baton_client.errors import BatonError

from ..models import RetainedPublication, Subscription
from ..tree import TopicTree
from .delivery import retained_deliver
from .stored import message_stored

log = logging.getLogger(__name__)


def effects_wanted(*, tree: TopicTree, topic: str, retain: bool) -> bool:
    return retain or topic in tree.activations or topic in tree.deactivations


def retained_replace(*, broker: Broker, topic: str, msg: MessageInput, msg_id: str, at: datetime) -> None:
    """Make this the topic's retained publication. Caller holds an open database transaction."""
    body, fields = message_stored(msg)
    values = {"msg_id": msg_id, "body": body, "message": fields, "published_at": at}
    if RetainedPublication.objects.filter(broker=broker, topic=topic).update(**values):
        return
    try:
        with db.atomic():
            RetainedPublication.objects.create(broker=broker, topic=topic, **values)
    except IntegrityError:  # another publisher inserted it first (PostgreSQL): replace theirs
        RetainedPublication.objects.filter(broker=broker, topic=topic).update(**values)


def effects_apply(
    *,
    broker: Broker,
    tree: TopicTree,
    topic: str,
    msg: MessageInput,
    msg_id: str,
    retain: bool,
    at: datetime,
    strict: bool = True,
) -> None:
    """Retain, then activate (each newly active subscription receives the retained
    publications it matches, this one included when retained), then deactivate. Caller holds
    an open database transaction. ``strict``: a retained publication a newly active durable
    subscription's queue cannot take fails the call; otherwise (at a unit of work's commit,
    which must not fail) that subscription is activated without them and it is logged."""
    if retain:
        retained_replace(broker=broker, topic=topic, msg=msg, msg_id=msg_id, at=at)
    if ids := tree.activations.get(topic):
        woken = list(
            Subscription.objects.select_for_update()
            .filter(pk__in=ids, active=False)
            .select_related("queue")
            .order_by("pk")
        )
        if woken:
            Subscription.objects.filter(pk__in=[s.pk for s in woken]).update(active=True)
        for sub in woken:
            if sub.new_publications_only:
                continue
            try:
                with db.atomic():
                    retained_deliver(broker=broker, subscription=sub)
            except BatonError as exc:
                if strict:
                    raise
                log.warning("subscription %s activated without its retained publications: %s", sub.name, exc)
    if ids := tree.deactivations.get(topic):
        Subscription.objects.filter(pk__in=ids, active=True).update(active=False)

"""Defining, altering and deleting topic objects. Each change moves the topic tree version
in its database transaction (pubsub.tree)."""

from __future__ import annotations

from django.db import IntegrityError, transaction as db

from brokers.selectors import broker_get
from baton_client.errors import AlreadyExists

from ..exceptions import TopicNotFound
from ..models import Topic
from ..tree import tree_version_bump

TOPIC_FIELDS = {"conflation_interval_ms", "durable_subscriptions", "description"}


def _topic(broker: str, name: str, *, lock: bool = False) -> Topic:
    rows = Topic.objects.select_related("broker")
    if lock:
        rows = rows.select_for_update()
    try:
        return rows.get(broker__name=broker, name=name)
    except Topic.DoesNotExist as exc:
        broker_get(name=broker)  # a missing broker is the better error
        raise TopicNotFound(f"No topic object {name!r} on broker {broker!r}.", broker=broker, topic=name) from exc


def topic_define(*, broker: str, name: str, topic_string: str, **attributes) -> Topic:
    """Define a topic object administering ``topic_string`` and the strings below it.
    ``name``, ``topic_string`` and ``attributes`` (of TOPIC_FIELDS) are valid already: the
    caller's boundary parsed them through ``TopicDefine.Input``."""
    with db.atomic():
        owner = broker_get(name=broker)
        topic = Topic(broker=owner, name=name, topic_string=topic_string, **attributes)
        taken = Topic.objects.filter(broker=owner, topic_string=topic_string).values_list("name", flat=True).first()
        if taken is not None:
            raise AlreadyExists(
                f"Topic object {taken!r} already administers {topic_string!r}.",
                broker=broker,
                topic=taken,
                topic_string=topic_string,
            )
        try:
            with db.atomic():
                topic.save()
        except IntegrityError as exc:
            raise AlreadyExists(
                f"Topic object {name!r} already exists on broker {broker!r}.", broker=broker, topic=name
            ) from exc
        tree_version_bump()
    return topic


def topic_alter(*, broker: str, name: str, **changes) -> Topic:
    """Change a topic object's attributes (``changes``: valid already, as parsed by
    ``TopicAlter.Input``)."""
    with db.atomic():
        topic = _topic(broker, name, lock=True)
        for key, value in changes.items():
            setattr(topic, key, value)
        topic.save(update_fields=[*sorted(changes), "altered_at"])
        tree_version_bump()
    return topic


def topic_delete(*, broker: str, name: str) -> None:
    with db.atomic():
        _topic(broker, name, lock=True).delete()
        tree_version_bump()

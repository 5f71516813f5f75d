"""Reads of topic objects, subscriptions and retained publications."""

from __future__ import annotations

from brokers.selectors import broker_get
from baton_client.errors import InvalidInput

from .exceptions import SubscriptionNotFound, TopicNotFound
from .models import RetainedPublication, Subscription, Topic
from .topics import filter_problems, literal_prefix, matches


def topic_list(*, broker: str) -> list[Topic]:
    owner = broker_get(name=broker)
    return list(Topic.objects.filter(broker=owner).select_related("broker").order_by("topic_string"))


def topic_get(*, broker: str, name: str) -> Topic:
    topic = Topic.objects.filter(broker__name=broker, name=name).select_related("broker").first()
    if topic is None:
        broker_get(name=broker)
        raise TopicNotFound(f"No topic object {name!r} on broker {broker!r}.", broker=broker, topic=name)
    return topic


def subscription_list(*, broker: str) -> list[Subscription]:
    owner = broker_get(name=broker)
    return list(Subscription.objects.filter(broker=owner).select_related("broker", "queue").order_by("name"))


def subscription_get(*, broker: str, name: str) -> Subscription:
    sub = Subscription.objects.filter(broker__name=broker, name=name).select_related("broker", "queue").first()
    if sub is None:
        broker_get(name=broker)
        raise SubscriptionNotFound(f"No subscription {name!r} on broker {broker!r}.", broker=broker, subscription=name)
    return sub


def retained_list(*, broker: str, topic_filter: str = "#") -> list[RetainedPublication]:
    """The retained publications whose topics the filter matches, by topic."""
    if problems := filter_problems(topic_filter):
        raise InvalidInput("The topic filter is not valid.", errors={"topic_filter": problems})
    owner = broker_get(name=broker)
    rows = RetainedPublication.objects.filter(broker=owner).order_by("topic")
    if prefix := literal_prefix(topic_filter):
        rows = rows.filter(topic__startswith=prefix)
    return [r for r in rows if matches(topic_filter, r.topic)]


def retained_all(*, broker: str) -> list[RetainedPublication]:
    """Every retained publication of the broker, by topic ('$' topics too, which ``#`` leaves out)."""
    owner = broker_get(name=broker)
    return list(RetainedPublication.objects.filter(broker=owner).order_by("topic"))

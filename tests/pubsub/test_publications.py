"""Publications, subscriptions, retained publications and activation (docs/api.md,
"Publish/subscribe"), through the services."""

from __future__ import annotations

import pytest

from baton_client.errors import QueueFull
from brokers.models import Queue
from brokers.selectors import queue_depths
from brokers.services.messages import message_browse
from brokers.services.queues import queue_alter
from baton_client.errors import AlreadyExists, InvalidInput
from pubsub.api.definitions import SubscriptionDefine
from pubsub.api.operations import PublicationPublish
from pubsub.api.retained import RetainedClear
from pubsub.models import RetainedPublication, Subscription
from pubsub.selectors import retained_list
from pubsub.services.retained import retained_clear
from pubsub.services.subscriptions import (
    subscription_define,
    subscription_delete,
    subscriptions_nondurable_remove,
)
from pubsub.services.topics import topic_define

from .conftest import publish, received

pytestmark = pytest.mark.django_db


def sub(name: str, topic_filter: str, queue: str, **options):
    return subscription_define(broker="QM1", name=name, topic_filter=topic_filter, queue=queue, **options)


def test_publication_reaches_every_matching_subscription_once(queues):
    sub("a", "sport/#", "S1")
    sub("b", "sport/+", "S2")
    sub("c", "news/#", "S3")
    result = publish("sport/tennis", "ace")
    assert result.matched == 2 and not result.retained and not result.held
    assert received("S1") == [("sport/tennis", "ace", False)]
    assert received("S2") == [("sport/tennis", "ace", False)]
    assert received("S3") == []
    assert publish("sport").matched == 1  # '#' matches the parent; '+' does not
    assert publish("nobody/listens").matched == 0


def test_two_subscriptions_on_one_queue_give_two_copies(queues):
    sub("a", "t", "S1")
    sub("b", "#", "S1")
    assert publish("t").matched == 2
    names = sorted(m.properties["subscription"] for m in message_browse(broker="QM1", queue="S1").messages)
    assert names == ["a", "b"]


def test_copies_carry_topic_subscription_and_user_properties(queues):
    sub("a", "t/+", "S1")
    result = publish("t/1", "body", properties={"k": "v"}, priority=7)
    [copy] = message_browse(broker="QM1", queue="S1").messages
    assert copy.properties == {
        "k": "v",
        "topic": "t/1",
        "subscription": "a",
        "is_retained": False,
        "publication": result.msg_id,
    }
    assert copy.priority == 7


def test_dollar_topics_not_matched_by_leading_wildcards(queues):
    sub("all", "#", "S1")
    sub("sys", "$SYS/#", "S2")
    assert publish("$SYS/x").matched == 1
    assert received("S1") == [] and len(received("S2")) == 1


def test_retained_publication_replaced_kept_and_sent_to_new_subscribers(queues):
    publish("a/b", "one", retain=True)
    publish("a/b", "two", retain=True)
    publish("a/b", "not retained")
    publish("a/c", "other", retain=True)
    assert [(r.topic, bytes(r.body)) for r in retained_list(broker="QM1", topic_filter="a/#")] == [
        ("a/b", b"two"),
        ("a/c", b"other"),
    ]
    sub("wild", "a/+", "S1")  # a wildcard subscription gets them (rabbitmq-server #8824)
    assert received("S1") == [("a/b", "two", True), ("a/c", "other", True)]
    sub("fresh", "a/+", "S2", new_publications_only=True)
    assert received("S2") == []
    publish("a/b", "three", retain=True)
    assert received("S1")[-1] == ("a/b", "three", False)  # a live copy is not "retained"


def test_retained_clear(queues):
    publish("x", "1", retain=True)
    assert retained_clear(broker="QM1", topic="x") is True
    assert retained_clear(broker="QM1", topic="x") is False
    assert retained_list(broker="QM1") == []
    with pytest.raises(InvalidInput):  # validated where it enters
        RetainedClear.parse({"broker": "QM1", "topic": "x/#"})


def test_activation_and_deactivation(queues):
    publish("prices/eur", "1.10", retain=True)
    s = sub("watch", "prices/#", "S1", activation_topic="control/on", deactivation_topic="control/off")
    assert s.active is False and received("S1") == []
    assert publish("prices/eur", "1.11", retain=True).matched == 0  # inactive: nothing kept for it
    publish("control/on")
    assert Subscription.objects.get(name="watch").active
    assert received("S1") == [("prices/eur", "1.11", True)]
    publish("prices/eur", "1.12")
    publish("control/off")
    publish("prices/eur", "1.13")
    assert [b for _, b, _ in received("S1")] == ["1.11", "1.12"]
    publish("control/on")  # active again: the retained one again
    assert received("S1")[-1] == ("prices/eur", "1.11", True)


def test_subscription_without_activation_topic_starts_active(queues):
    assert sub("s", "t", "S1", deactivation_topic="off").active


def test_bad_definitions_name_the_field_and_define_nothing(queues):
    cases = [
        ({"topic_filter": "a/#/b"}, "topic_filter"),
        ({"topic_filter": "a+"}, "topic_filter"),
        ({"queue": "NOPE"}, "queue"),
        ({"activation_topic": "on/+"}, "activation_topic"),
        ({"deactivation_topic": "off/#"}, "deactivation_topic"),
        ({"name": "bad name"}, "name"),
    ]
    for change, field in cases:
        fields = {"name": "s", "topic_filter": "t", "queue": "S1", **change}
        with pytest.raises(InvalidInput) as caught:  # validated where it enters, then defined
            subscription_define(**SubscriptionDefine.parse({"broker": "QM1", **fields}).model_dump())
        assert field in caught.value.details["errors"], (change, caught.value.details)
    assert not Subscription.objects.exists()
    sub("s", "t", "S1")
    with pytest.raises(AlreadyExists):
        sub("s", "u", "S2")


def test_publish_topic_with_wildcards_is_invalid(queues):
    for topic in ("a/+", "#", "", "a\x00"):
        with pytest.raises(InvalidInput) as caught:  # validated where it enters
            PublicationPublish.parse({"broker": "QM1", "topic": topic})
        assert "topic" in caught.value.details["errors"]


def test_full_durable_queue_fails_the_publication_whole(queues):
    queue_alter(broker="QM1", name="S2", max_depth=1)
    sub("a", "t", "S1")
    sub("b", "t", "S2")
    publish("t", "fits")
    with pytest.raises(QueueFull) as caught:
        publish("t", "too many", retain=True)
    assert caught.value.details["subscription"] == "b"
    assert [b for _, b, _ in received("S1")] == ["fits"]  # nothing delivered
    assert not RetainedPublication.objects.exists()  # and nothing retained


def test_full_non_durable_queue_is_skipped(queues):
    queue_alter(broker="QM1", name="S2", max_depth=1)
    sub("a", "t", "S1", durable=False)
    sub("b", "t", "S2", durable=False)
    publish("t", "1")
    assert publish("t", "2").matched == 1
    assert [b for _, b, _ in received("S1")] == ["1", "2"]
    assert [b for _, b, _ in received("S2")] == ["1"]
    depths = queue_depths(queue_ids=[Queue.objects.get(name="S2").pk])
    assert list(depths.values())[0]["depth"] == 1


def test_non_durable_subscriptions_removed_at_restart_and_durable_refused_by_topic_object(queues):
    topic_define(broker="QM1", name="T", topic_string="scratch", durable_subscriptions=False)
    with pytest.raises(InvalidInput) as caught:
        sub("d", "scratch/#", "S1")
    assert "durable" in caught.value.details["errors"]
    sub("n", "scratch/#", "S1", durable=False)
    sub("d", "other", "S1")
    assert subscriptions_nondurable_remove() == 1
    assert list(Subscription.objects.values_list("name", flat=True)) == ["d"]


def test_deleted_subscription_receives_nothing(queues):
    sub("a", "t", "S1")
    publish("t")
    subscription_delete(broker="QM1", name="a")
    assert publish("t").matched == 0


def test_new_subscription_seen_by_the_cached_tree(queues):
    assert publish("t").matched == 0  # builds and caches the tree
    sub("a", "t", "S1")
    assert publish("t").matched == 1

"""The publish/subscribe administrator commands: they call the services, print, and on any
error print one line and change nothing."""

from __future__ import annotations

import json

import pytest
from django.core.management.base import CommandError

from pubsub.models import Subscription, Topic
from tests.commands.conftest import run

from .conftest import received

pytestmark = pytest.mark.django_db


def test_topic_commands(queues):
    assert "defined" in run("define_topic", "QM1", "PRICES", "prices", "--conflation-interval-ms", "250").out
    assert Topic.objects.get(name="PRICES").conflation_interval_ms == 250
    run("alter_topic", "QM1", "PRICES", "--no-durable-subscriptions", "--description", "fx")
    listing = dict(line.split(None, 1) for line in run("display_topic", "QM1", "PRICES").lines)
    assert listing["durable_subscriptions"] == "no" and listing["description"] == "fx"
    assert "PRICES" in run("display_topic", "QM1").out
    assert json.loads(run("display_topic", "QM1", "*", "--json").out)[0]["topic_string"] == "prices"
    with pytest.raises(CommandError, match=r"topic_string.*\[invalid\]"):
        run("define_topic", "QM1", "BAD", "a/#")
    run("delete_topic", "QM1", "PRICES")
    assert not Topic.objects.exists()
    with pytest.raises(CommandError, match=r"\[not_found\]"):
        run("delete_topic", "QM1", "PRICES")


def test_subscription_and_publish_commands(queues):
    out = run("define_sub", "QM1", "s1", "sport/#", "S1").out
    assert "active" in out and "inactive" not in out
    assert (
        "inactive" in run("define_sub", "QM1", "s2", "sport/+", "S2", "--activation-topic", "go", "--durable", "no").out
    )
    assert run("publish", "QM1", "sport", "goal", "--retain", "--property", "k=v").out.split()[1:3] == ["matched", "1"]
    assert received("S1") == [("sport", "goal", False)]
    run("publish", "QM1", "go", "")
    assert received("S2") == []  # 'sport/+' does not match 'sport'
    table = run("display_sub", "QM1").out
    assert "s1" in table and "s2" in table and "TOPIC_FILTER" in table
    assert json.loads(run("display_sub", "QM1", "s2", "--json").out)[0]["active"] is True
    assert "sport" in run("display_retained", "QM1").out
    assert "cleared" in run("clear_retained", "QM1", "sport").out
    assert "recovery: 1 non-durable" in run("pubsub_recover").out
    run("delete_sub", "QM1", "s1")
    assert not Subscription.objects.exists()


def test_bad_input_one_line_nothing_defined(queues):
    for args, field in [
        (("QM1", "s", "a/#/b", "S1"), "topic_filter"),
        (("QM1", "s", "a", "NOPE"), "queue"),
        (("QM1", "s", "a", "S1", "--activation-topic", "x/+"), "activation_topic"),
    ]:
        with pytest.raises(CommandError, match=field):
            run("define_sub", *args)
    assert not Subscription.objects.exists()
    with pytest.raises(CommandError, match=r"topic.*\[invalid\]"):
        run("publish", "QM1", "a/+", "x")

"""The Python client's publish/subscribe methods against a real platform (Uvicorn, Celery
worker and beat): subscriptions, publications, retained publications, a unit of work, and
a conflated publication delivered by the beat-driven sweeper."""

from __future__ import annotations

import time

import pytest

from baton_client import InvalidInput, QueueFull

pytestmark = [pytest.mark.integration, pytest.mark.once]  # once: its servers use SQLite in either pass


def test_subscribe_publish_get(client, broker):
    client.define_queue(broker, "S1")
    sub = client.subscribe(broker, "s", "sport/+", "S1")
    assert sub["active"] is True and client.display_subscription(broker, "s")["topic_filter"] == "sport/+"
    result = client.publish(broker, "sport/tennis", "ace", retain=True, properties={"k": "v"})
    assert result["matched"] == 1 and result["retained"] is True
    copy = client.get(broker, "S1")
    assert copy.text == "ace" and copy.properties["topic"] == "sport/tennis" and copy.properties["is_retained"] is False
    assert [r["topic"] for r in client.retained(broker, "sport/#")] == ["sport/tennis"]
    client.clear_retained(broker, "sport/tennis")
    assert client.retained(broker) == []
    assert [s["name"] for s in client.list_subscriptions(broker)] == ["s"]
    client.unsubscribe(broker, "s")
    assert client.list_subscriptions(broker) == []


def test_errors(client, broker):
    with pytest.raises(InvalidInput) as caught:
        client.publish(broker, "a/+", "x")
    assert "topic" in caught.value.errors
    client.define_queue(broker, "TINY", max_depth=0)
    client.subscribe(broker, "t", "t", "TINY")
    with pytest.raises(QueueFull):
        client.publish(broker, "t", "x")


def test_publish_under_a_unit_of_work(client, broker):
    client.define_queue(broker, "S1")
    client.subscribe(broker, "s", "#", "S1")
    with client.transaction(broker) as txn:
        assert txn.publish("t", "in uow", retain=True)["matched"] == 1
        assert client.get(broker, "S1") is None and client.retained(broker) == []
    assert client.get(broker, "S1").text == "in uow"
    assert [r["body"] for r in client.retained(broker)] == ["in uow"]


def test_topic_objects_and_conflation_by_the_beat_sweeper(client, broker):
    client.define_queue(broker, "S1")
    topic = client.define_topic(broker, "PRICES", "prices", conflation_interval_ms=1000)
    assert client.display_topic(broker, "PRICES")["conflation_interval_ms"] == topic["conflation_interval_ms"] == 1000
    client.subscribe(broker, "s", "prices/#", "S1")
    assert client.publish(broker, "prices/eur", "1")["matched"] == 1
    held = [client.publish(broker, "prices/eur", str(n)) for n in (2, 3)]
    deadline = time.monotonic() + 30
    seen = []
    while time.monotonic() < deadline and seen[-1:] != ["3"]:
        if (m := client.get(broker, "S1", wait=1)) is not None:
            seen.append(m.text)
    # each delivered once, in order, the latest last; when both were held only the latest is
    assert seen[0] == "1" and seen[-1] == "3" and seen == sorted(set(seen)), seen
    if held[0]["held"] and held[1]["held"]:
        assert seen == ["1", "3"]
    assert [t["name"] for t in client.list_topics(broker)] == ["PRICES"]
    client.alter_topic(broker, "PRICES", conflation_interval_ms=0)
    client.delete_topic(broker, "PRICES")
    assert client.list_topics(broker) == []

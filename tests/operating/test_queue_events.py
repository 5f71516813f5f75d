"""Queue performance events (brokers/operating/events.py): the thresholds are queue attributes
(off by default, 400 naming a bad one), each crossing puts one event message on the broker's
SYSTEM.ADMIN.PERFM.EVENT queue when the housekeeping evaluates the queues."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from brokers.models import Message, QueueEventState
from brokers.operating.events import EVENT_QUEUE, queue_events_evaluate, queue_events_open
from brokers.operating.housekeeping import operating_housekeep
from brokers.services.brokers import broker_define

pytestmark = pytest.mark.django_db
QUEUES = "/api/brokers/QM1/queues/"


def events(api) -> list[dict]:
    """The event messages put so far, gotten off the event queue."""
    got = api.post(f"{QUEUES}{EVENT_QUEUE}/get/", {"batch": 100}, format="json")
    if got.status_code == 404:
        return []
    assert got.status_code == 200, got.content
    return [json.loads(m["body"]) for m in got.json()["messages"]]


def put(api, queue: str, n: int) -> None:
    for i in range(n):
        assert api.post(f"{QUEUES}{queue}/messages/", {"body": f"m{i}"}, format="json").status_code == 201


def get(api, queue: str, n: int) -> None:
    got = api.post(f"{QUEUES}{queue}/get/", {"batch": n}, format="json")
    assert got.status_code == 200 and len(got.json()["messages"]) == n


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"depth_high_pct": 101}, "depth_high_pct"),
        ({"depth_low_pct": -1}, "depth_low_pct"),
        ({"service_interval_ms": "soon"}, "service_interval_ms"),
        ({"depth_high_pct": 40, "depth_low_pct": 60}, "depth_low_pct"),
    ],
)
def test_a_bad_threshold_is_refused_naming_it(api, body, field):
    broker_define(name="QM1")
    response = api.post(QUEUES, {"name": "Q1", **body}, format="json")
    assert response.status_code == 400, response.content
    assert response.json()["code"] == "invalid" and field in json.dumps(response.json())
    assert api.get(f"{QUEUES}Q1/").status_code == 404  # nothing defined
    assert api.post(QUEUES, {"name": "Q1"}, format="json").status_code == 201
    altered = api.patch(f"{QUEUES}Q1/", body, format="json")
    assert altered.status_code == 400 and field in json.dumps(altered.json())
    shown = api.get(f"{QUEUES}Q1/").json()
    assert (shown["depth_high_pct"], shown["depth_low_pct"], shown["service_interval_ms"]) == (0, 0, 0)  # off


def test_depth_high_and_low_once_per_crossing(api):
    broker_define(name="QM1")
    response = api.post(
        QUEUES, {"name": "Q1", "max_depth": 10, "depth_high_pct": 50, "depth_low_pct": 20}, format="json"
    )
    assert response.status_code == 201, response.content
    assert api.post(QUEUES, {"name": "QUIET"}, format="json").status_code == 201
    put(api, "QUIET", 3)
    assert queue_events_evaluate() == 0  # a queue at its first evaluation, below both: nothing
    put(api, "Q1", 4)
    assert queue_events_evaluate() == 0
    put(api, "Q1", 1)  # 5 of 10: 50%
    assert queue_events_evaluate() == 1
    assert queue_events_evaluate() == 0  # still high: no second event
    assert [s.queue.name for s in queue_events_open()] == ["Q1"]
    get(api, "Q1", 3)  # 2 of 10: 20%
    assert queue_events_evaluate() == 1
    put(api, "Q1", 3)
    assert operating_housekeep()["queue_events"] == 1  # high again, through the housekeeping
    seen = events(api)
    assert [(e["event"], e["queue"], e["depth"]) for e in seen] == [
        ("queue_depth_high", "Q1", 5),
        ("queue_depth_low", "Q1", 2),
        ("queue_depth_high", "Q1", 5),
    ]
    assert seen[0]["max_depth"] == 10 and seen[0]["depth_high_pct"] == 50 and seen[0]["broker"] == "QM1"
    assert not QueueEventState.objects.filter(queue__name="QUIET").exists()  # off: never evaluated


def test_service_interval_high_then_ok(api):
    broker_define(name="QM1")
    assert api.post(QUEUES, {"name": "Q2", "service_interval_ms": 60_000}, format="json").status_code == 201
    put(api, "Q2", 1)
    assert queue_events_evaluate() == 0
    Message.objects.filter(queue__name="Q2").update(put_time=timezone.now() - timedelta(minutes=2))
    assert queue_events_evaluate() == 1
    assert queue_events_evaluate() == 0
    get(api, "Q2", 1)
    assert queue_events_evaluate() == 1
    seen = events(api)
    assert [e["event"] for e in seen] == ["queue_service_interval_high", "queue_service_interval_ok"]
    assert seen[0]["oldest_message_age_ms"] >= 120_000 and seen[0]["service_interval_ms"] == 60_000
    assert queue_events_open() == []

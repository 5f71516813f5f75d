"""Dead-lettering bursts (brokers/operating/dead_letters.py): more than
BATON_DEAD_LETTER_BURST messages reaching a broker's dead-letter queue between two operating
passes put one dead_letter_burst event on its SYSTEM.ADMIN.PERFM.EVENT, counted from the
journal once."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from brokers.operating.dead_letters import dead_letter_bursts_evaluate
from brokers.operating.events import EVENT_QUEUE
from brokers.operating.housekeeping import operating_housekeep
from brokers.services.brokers import broker_define

pytestmark = pytest.mark.django_db
DLQ = "SYSTEM.DEAD.LETTER.QUEUE"


@pytest.fixture(autouse=True)
def burst_of_three(settings):
    settings.BATON_DEAD_LETTER_BURST = 3


def dead_letter(api, broker: str, n: int) -> None:
    """Put ``n`` messages on Q1, peek-lock them and dead-letter each (the REST API)."""
    queues = f"/api/brokers/{broker}/queues/"
    for i in range(n):
        assert api.post(f"{queues}Q1/messages/", {"body": f"m{i}"}, format="json").status_code == 201
    for _ in range(n):
        locked = api.post(f"{queues}Q1/get/", {"mode": "peek_lock"}, format="json").json()["messages"][0]
        moved = api.post(f"/api/locks/{locked['lock_token']}/dead-letter/", {"reason": "poison"}, format="json")
        assert moved.status_code == 200 and moved.json()["queue"] == DLQ, moved.content


def events(api, broker: str) -> list[dict]:
    got = api.post(f"/api/brokers/{broker}/queues/{EVENT_QUEUE}/get/", {"batch": 100}, format="json")
    if got.status_code == 404:
        return []
    assert got.status_code == 200, got.content
    return [json.loads(m["body"]) for m in got.json()["messages"]]


def test_a_burst_is_one_event_counted_once(api):
    for broker in ("QM1", "QM2"):
        broker_define(name=broker)
        assert api.post(f"/api/brokers/{broker}/queues/", {"name": "Q1"}, format="json").status_code == 201
    assert dead_letter_bursts_evaluate() == 0  # the first pass notes where the journal stands
    dead_letter(api, "QM1", 4)  # more than 3
    dead_letter(api, "QM2", 2)
    put = api.post(f"/api/brokers/QM2/queues/{DLQ}/messages/", {"body": "by hand"}, format="json")
    assert put.status_code == 201  # a put there arrives too: 3 on QM2, not more than 3
    assert operating_housekeep()["dead_letter_events"] == 1
    (event,) = events(api, "QM1")
    assert event["event"] == "dead_letter_burst" and event["broker"] == "QM1" and event["queue"] == DLQ
    assert (event["dead_lettered"], event["dead_letter_burst"]) == (4, 3)
    assert events(api, "QM2") == []
    assert dead_letter_bursts_evaluate() == 0  # each arrival counted once
    dead_letter(api, "QM2", 4)
    assert dead_letter_bursts_evaluate() == 1
    assert [e["dead_lettered"] for e in events(api, "QM2")] == [4]


def test_off_and_after_a_long_stop_nothing(api, settings):
    broker_define(name="QM1")
    assert api.post("/api/brokers/QM1/queues/", {"name": "Q1"}, format="json").status_code == 201
    assert dead_letter_bursts_evaluate() == 0
    settings.BATON_DEAD_LETTER_BURST = 0  # off
    dead_letter(api, "QM1", 4)
    assert dead_letter_bursts_evaluate() == 0
    settings.BATON_DEAD_LETTER_BURST = 3
    # the housekeeping stopped for an hour: what piled up is not one interval's burst
    assert dead_letter_bursts_evaluate(now=timezone.now() + timedelta(hours=1)) == 0
    assert events(api, "QM1") == []

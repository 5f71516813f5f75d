"""End to end through the REST API with the real clock and no housekeeping (no Celery beat
runs in the tests): a consumer waiting on a queue gets the message whose peek-lock runs out,
or whose holder's unit of work passes its deadline, within its wait; nothing wakes it but
the end of the lock or deadline itself."""

from __future__ import annotations

import pytest

from brokers.services.queues import queue_define

from .conftest import BROKER

pytestmark = pytest.mark.postgres

Q = f"/api/brokers/{BROKER}/queues/QS/"


@pytest.fixture
def short(broker):
    return queue_define(broker=BROKER, name="QS", lock_duration_ms=200).name


def _got(response) -> list[dict]:
    assert response.status_code == 200, response.content
    return response.json()["messages"]


def test_a_waiting_get_takes_the_message_when_its_lock_runs_out(api, short):
    assert api.post(Q + "messages/", {"body": "M1"}, format="json").status_code == 201
    [held] = _got(api.post(Q + "get/", {"mode": "peek_lock"}, format="json"))
    [again] = _got(api.post(Q + "get/", {"mode": "peek_lock", "wait": 30}, format="json"))
    assert (again["body"], again["delivery_count"]) == ("M1", 2)
    r = api.post(f"/api/locks/{held['lock_token']}/complete/", {}, format="json")
    assert (r.status_code, r.json()["code"]) == (410, "lock_lost")
    assert api.post(f"/api/locks/{again['lock_token']}/complete/", {}, format="json").status_code == 200


def test_a_waiting_get_takes_the_message_when_its_holder_times_out(api, short):
    assert api.post(Q + "messages/", {"body": "M1"}, format="json").status_code == 201
    r = api.post(f"/api/brokers/{BROKER}/transactions/", {"timeout_ms": 200}, format="json")
    assert r.status_code == 201, r.content
    holder = r.json()["id"]
    assert [m["body"] for m in _got(api.post(Q + "get/", {"transaction": holder}, format="json"))] == ["M1"]
    [again] = _got(api.post(Q + "get/", {"wait": 30}, format="json"))
    assert (again["body"], again["backout_count"]) == ("M1", 1)
    r = api.post(f"/api/transactions/{holder}/commit/", {}, format="json")
    assert (r.status_code, r.json()["code"]) == (409, "transaction_backed_out")

"""Linked transactions through the REST API."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.linked

Q = "/api/brokers/QM1/queues/Q1"


def begin(api) -> str:
    r = api.post("/api/brokers/QM1/transactions/", {}, format="json")
    assert r.status_code == 201
    return r.json()["id"]


def test_held_commit_answers_202_then_commits_with_upstream(api, queue):
    producer = begin(api)
    assert api.post(f"{Q}/messages/", {"body": "m", "transaction": producer}, format="json").status_code == 201
    consumer = begin(api)
    got = api.post(f"{Q}/get/", {"transaction": consumer, "preemptive": True}, format="json").json()
    assert [m["body"] for m in got["messages"]] == ["m"]
    r = api.post(f"/api/transactions/{consumer}/commit/", {"wait": 0.1}, format="json")
    assert r.status_code == 202 and r.json() == {"id": consumer, "state": "commit_held", "waiting_on": [producer]}
    detail = api.get(f"/api/transactions/{consumer}/").json()
    assert detail["state"] == "commit_held" and detail["upstream"] == [producer] and detail["downstream"] == []
    assert api.get(f"/api/transactions/{producer}/").json()["downstream"] == [consumer]
    check = api.post(f"/api/transactions/{consumer}/check/", {}, format="json").json()
    assert check["result"] == "pending" and check["waiting_on"] == [producer]
    assert api.post(f"/api/transactions/{producer}/commit/", {}, format="json").json()["state"] == "committed"
    assert api.get(f"/api/transactions/{consumer}/").json()["state"] == "committed"
    assert api.get(f"{Q}/").json()["depth"] == 0
    graph = api.get("/api/brokers/QM1/transactions/graph/").json()
    assert {"upstream": producer, "downstream": consumer, "resource": got["messages"][0]["msg_id"]} in graph["edges"]


def test_rollback_cascades_and_later_operations_name_the_cause(api, queue):
    producer = begin(api)
    api.post(f"{Q}/messages/", {"body": "m", "transaction": producer}, format="json")
    consumer = begin(api)
    api.post(f"{Q}/get/", {"transaction": consumer, "preemptive": True}, format="json")
    r = api.post(f"/api/transactions/{producer}/rollback/", {}, format="json")
    assert r.status_code == 200 and r.json()["state"] == "rolled_back" and r.json()["cascaded"] == [consumer]
    for call in (
        lambda: api.post(f"/api/transactions/{consumer}/commit/", {}, format="json"),
        lambda: api.post(f"{Q}/messages/", {"body": "x", "transaction": consumer}, format="json"),
        lambda: api.post(f"{Q}/get/", {"transaction": consumer}, format="json"),
    ):
        r = call()
        assert r.status_code == 409 and r.json()["code"] == "transaction_backed_out"
        assert f"cascade from {producer}" in r.json()["message"]
    check = api.post(f"/api/transactions/{consumer}/check/", {}, format="json").json()
    assert check["result"] == "backed_out"


def test_preemptive_without_unit_of_work_is_options_conflict(api, queue):
    r = api.post(f"{Q}/get/", {"preemptive": True}, format="json")
    assert r.status_code == 409 and r.json()["code"] == "options_conflict"

"""Workflows through REST and the session's operation table: the contract's paths and
fields, and every bad input of the contract answered with a clear error, its stable code
and status, and nothing changed."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from brokers.api.operations import SESSION_OPERATIONS
from brokers.services.access import api_token_issue, grant_actions
from workflows.models import Instance, InstanceHistory, StepRequest, Workflow

STEPS = [
    {"name": "validate", "queue": "A", "compensation_queue": "cA"},
    {"name": "approve", "queue": "B", "compensation_queue": "cB"},
]


def client_for(username: str, **grants) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {api_token_issue(username=username, create_user=True)}")
    grant_actions(username=username, broker="WF", actions="put,get,browse")
    return client


def error(response, status: int, code: str) -> dict:
    assert response.status_code == status, (response.status_code, response.content[:400])
    body = response.json()
    assert body["code"] == code and body["message"]
    return body


@pytest.fixture
def rest(wf, api):
    assert (
        api.post(
            "/api/brokers/WF/workflows/", {"name": "claim", "steps": STEPS, "deadline_ms": 0}, format="json"
        ).status_code
        == 201
    )
    return api


def start(api, **extra) -> dict:
    response = api.post("/api/brokers/WF/workflows/claim/instances/", {"body": "expense 42", **extra}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def take(api, queue: str) -> tuple[str, dict]:
    txn = api.post("/api/brokers/WF/transactions/", {}, format="json").json()["id"]
    got = api.post(f"/api/brokers/WF/queues/{queue}/get/", {"transaction": txn}, format="json").json()["messages"]
    return txn, got[0]


def test_define_display_alter_list_and_run_through_rest(rest):
    shown = rest.get("/api/brokers/WF/workflows/claim/").json()
    assert shown["version"] == 1 and [s["next"] for s in shown["steps"]] == [["approve"], []]
    altered = rest.patch("/api/brokers/WF/workflows/claim/", {"deadline_ms": 5000}, format="json").json()
    assert altered["version"] == 2 and altered["deadline_ms"] == 5000
    started = start(rest)
    assert started["state"] == "running" and started["version"] == 2 and started["workflow"] == "claim"
    txn, request = take(rest, "A")
    assert request["properties"]["workflow"] == {
        "instance": started["id"],
        "workflow": "claim",
        "step": "validate",
        "compensation": False,
    }
    done = rest.post(
        f"/api/workflow-instances/{started['id']}/steps/validate/complete/",
        {"transaction": txn, "output": {"body": "valid"}, "compensation": {"body": "unvalidate"}},
        format="json",
    )
    assert done.status_code == 200 and done.json()["state"] == "in_flight"
    assert rest.post(f"/api/transactions/{txn}/commit/", {}, format="json").json()["state"] == "committed"
    detail = rest.get(f"/api/workflow-instances/{started['id']}/").json()
    assert [(s["name"], s["state"]) for s in detail["steps"]] == [("validate", "committed"), ("approve", "pending")]
    assert {"at", "event", "step", "detail"} <= set(detail["history"][0])
    found = rest.get("/api/brokers/WF/workflows/claim/instances/?state=running&step=approve").json()
    assert [i["id"] for i in found["results"]] == [started["id"]]
    assert rest.get("/api/brokers/WF/workflows/claim/instances/?step=validate").json()["count"] == 0
    aborted = rest.post(f"/api/workflow-instances/{started['id']}/abort/", {"reason": "withdrawn"}, format="json")
    assert aborted.status_code == 202 and aborted.json()["state"] == "compensating"
    assert rest.get("/api/brokers/WF/workflows/").json()["results"][0]["instances"]["compensating"] == 1


def test_the_session_offers_every_operation():
    assert {"workflow_start", "step_complete", "step_fail", "step_compensated", "workflow_abort"} <= set(
        SESSION_OPERATIONS
    )


def test_unknown_workflow_and_unknown_step_are_404(rest):
    error(rest.post("/api/brokers/WF/workflows/nope/instances/", {"body": "x"}, format="json"), 404, "not_found")
    error(rest.get("/api/brokers/WF/workflows/nope/"), 404, "not_found")
    instance = start(rest)["id"]
    txn, _ = take(rest, "A")
    error(
        rest.post(f"/api/workflow-instances/{instance}/steps/nope/complete/", {"transaction": txn}, format="json"),
        404,
        "not_found",
    )
    error(
        rest.post(f"/api/workflow-instances/{'0' * 48}/steps/validate/complete/", {"transaction": txn}, format="json"),
        404,
        "not_found",
    )
    error(rest.get(f"/api/workflow-instances/{'0' * 48}/"), 404, "not_found")


def test_a_step_completed_twice_is_409_and_nothing_changes(rest):
    instance = start(rest)["id"]
    txn, _ = take(rest, "A")
    url = f"/api/workflow-instances/{instance}/steps/validate/complete/"
    assert rest.post(url, {"transaction": txn}, format="json").status_code == 200
    requests = StepRequest.objects.count()
    error(rest.post(url, {"transaction": txn}, format="json"), 409, "workflow_conflict")
    rest.post(f"/api/transactions/{txn}/commit/", {}, format="json")
    other, _ = take(rest, "B")
    error(rest.post(url, {"transaction": other}, format="json"), 409, "workflow_conflict")
    assert StepRequest.objects.count() == requests


def test_completion_under_another_users_unit_of_work_is_404(rest):
    instance = start(rest)["id"]
    txn, _ = take(rest, "A")
    mallory = client_for("mallory")
    history = InstanceHistory.objects.count()
    error(
        mallory.post(
            f"/api/workflow-instances/{instance}/steps/validate/complete/", {"transaction": txn}, format="json"
        ),
        404,
        "not_found",
    )
    error(
        mallory.post(f"/api/workflow-instances/{instance}/steps/validate/fail/", {"transaction": txn}, format="json"),
        404,
        "not_found",
    )
    assert InstanceHistory.objects.count() == history


def test_compensation_for_a_step_that_never_committed_is_409(rest):
    instance = start(rest)["id"]
    txn, _ = take(rest, "A")
    error(
        rest.post(
            f"/api/workflow-instances/{instance}/steps/validate/compensated/", {"transaction": txn}, format="json"
        ),
        409,
        "workflow_conflict",
    )
    error(
        rest.post(
            f"/api/workflow-instances/{instance}/steps/approve/compensated/", {"transaction": txn}, format="json"
        ),
        409,
        "workflow_conflict",
    )


def test_deleting_a_workflow_with_instances_running_is_409(rest):
    instance = start(rest)["id"]
    error(rest.delete("/api/brokers/WF/workflows/claim/"), 409, "not_empty")
    assert Workflow.objects.filter(name="claim").exists() and Instance.objects.filter(pk=instance).exists()
    rest.post(f"/api/workflow-instances/{instance}/abort/", {}, format="json")
    assert Instance.objects.get(pk=instance).state == "compensated"  # nothing had committed
    assert rest.delete("/api/brokers/WF/workflows/claim/").status_code == 204


@pytest.mark.parametrize(
    "body, field",
    [
        ({"name": "w", "steps": []}, "steps"),
        ({"name": "w", "steps": [{"name": "a", "queue": "NOPE", "compensation_queue": "cA"}]}, "steps[0].queue"),
        (
            {"name": "w", "steps": [{"name": "a", "queue": "A", "compensation_queue": "cA", "next": ["zz"]}]},
            "steps[0].next",
        ),
        (
            {
                "name": "w",
                "steps": [
                    {"name": "a", "queue": "A", "compensation_queue": "cA", "next": []},
                    {"name": "b", "queue": "B", "compensation_queue": "cB"},
                ],
            },
            "steps[1].name",
        ),
        (
            {
                "name": "w",
                "steps": [
                    {"name": "a", "queue": "A", "compensation_queue": "cA"},
                    {"name": "a", "queue": "B", "compensation_queue": "cB"},
                ],
            },
            "steps[1].name",
        ),
        (
            {
                "name": "w",
                "steps": [
                    {"name": "a", "queue": "A", "compensation_queue": "cA"},
                    {"name": "b", "queue": "B", "compensation_queue": "cB", "next": ["c"]},
                    {"name": "c", "queue": "C", "compensation_queue": "cC", "next": ["b"]},
                ],
            },
            "steps",
        ),
        ({"name": "w", "steps": [{"name": "a", "queue": "A"}]}, "steps.0.compensation_queue"),
        ({"name": "w", "deadline_ms": -1, "steps": STEPS}, "deadline_ms"),
    ],
)
def test_bad_definitions_are_400_and_define_nothing(rest, body, field):
    found = error(rest.post("/api/brokers/WF/workflows/", body, format="json"), 400, "invalid")
    assert any(k.startswith(field.split(".")[0]) for k in found["errors"]), found
    assert not Workflow.objects.filter(name="w").exists()


def test_a_second_definition_of_a_name_is_409(rest):
    error(
        rest.post("/api/brokers/WF/workflows/", {"name": "claim", "steps": STEPS}, format="json"), 409, "already_exists"
    )


def test_starting_needs_put_on_the_first_queue(rest):
    reader = APIClient()
    reader.credentials(HTTP_AUTHORIZATION=f"Token {api_token_issue(username='reader', create_user=True)}")
    grant_actions(username="reader", broker="WF", actions="browse")
    error(
        reader.post("/api/brokers/WF/workflows/claim/instances/", {"body": "x"}, format="json"),
        403,
        "permission_denied",
    )
    assert not Instance.objects.exists()

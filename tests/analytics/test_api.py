"""REST: analytics runs and a broker's latest results (the Spark job's own tests run it)."""

from __future__ import annotations

import json

import pytest

from analytics.models import AnalyticsRun, RunState
from analytics.services import _load

pytestmark = pytest.mark.django_db


def test_before_the_first_run_results_are_empty_with_computed_at_null(api, broker):
    body = api.get("/api/brokers/QM1/analytics/").json()
    assert body == {
        "broker": "QM1",
        "computed_at": None,
        "run": None,
        "units_of_work": {},
        "queues": [],
        "throughput": [],
        "chains": [],
        "workflow_hours": [],
        "workflow_steps": [],
        "compensations": [],
    }


def test_unknown_broker_is_404(api, broker):
    assert api.get("/api/brokers/NOPE/analytics/").status_code == 404


def test_a_run_is_queued_and_can_be_followed(api):
    response = api.post("/api/analytics/runs/", {}, format="json")
    assert response.status_code == 202, response.content
    run = response.json()
    assert run["state"] == "queued" and run["trigger"] == "request"
    assert api.get(f"/api/analytics/runs/{run['id']}/").json()["id"] == run["id"]
    assert api.post("/api/analytics/runs/", {"now": True}, format="json").json()["errors"] == {
        "now": ["Unknown field."]
    }
    assert api.get("/api/analytics/runs/nope/").status_code == 404


def test_loaded_results_are_served_per_broker(api, broker, tmp_path):
    run = AnalyticsRun.objects.create(state=RunState.SUCCEEDED)
    rows = {
        "brokers": [{"broker": "QM1", "committed": 3, "saved_ms": 12.5}, {"broker": "QM2", "committed": 1}],
        "queues": [{"broker": "QM1", "queue": "Q1", "puts": 4, "dwell_p99_ms": 7.0}],
        "throughput": [
            {"broker": "QM1", "queue": "Q1", "minute": "2025-05-01T12:00:00Z", "puts": 4, "gets": 0, "depth": 4}
        ],
        "chains": [],
    }
    for name, items in rows.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "part-00000.json").write_text("".join(json.dumps(i) + "\n" for i in items))
    _load(run, tmp_path)
    body = api.get("/api/brokers/QM1/analytics/").json()
    assert body["run"] == run.pk and body["computed_at"]
    assert body["units_of_work"] == {"committed": 3, "saved_ms": 12.5}
    assert body["queues"] == [{"queue": "Q1", "puts": 4, "dwell_p99_ms": 7.0}]
    assert body["throughput"][0]["depth"] == 4 and body["chains"] == []
    assert body["workflow_hours"] == body["workflow_steps"] == body["compensations"] == []

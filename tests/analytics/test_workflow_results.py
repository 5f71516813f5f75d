"""The Django side of the workflow analytics: the history export the Spark job reads, and
its results loaded per broker (the job itself: tests/spark_jobs/test_workflow_analytics.py)."""

from __future__ import annotations

import json

import pytest

from analytics.models import AnalyticsRun, BrokerAnalytics, RunState
from analytics.services import _load
from brokers.services.message_input import MessageInput
from brokers.services.queues import queue_define
from workflows.export import workflow_history_export
from workflows.services.definitions import workflow_define
from workflows.services.instances import instance_start, workflow_abort

pytestmark = pytest.mark.django_db


def test_the_history_is_exported_whole_with_broker_and_workflow(broker, tmp_path):
    queue_define(broker="QM1", name="Q1")
    workflow_define(broker="QM1", name="w", steps=[{"name": "a", "queue": "Q1", "compensation_queue": "Q1"}])
    instance = instance_start(broker="QM1", name="w", message=MessageInput(body=b"go")).pk
    workflow_abort(instance_id=instance, reason="private reason")
    path = tmp_path / "workflows" / "history.jsonl"
    for _ in range(2):  # replaced whole, not appended to
        summary = workflow_history_export(path=path, chunk_size=2)
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert summary == {"path": str(path), "events": 3}
    assert [r["event"] for r in rows] == ["started", "aborted", "compensated"]
    assert {(r["broker"], r["workflow"], r["version"], r["instance"]) for r in rows} == {("QM1", "w", 1, instance)}
    assert set(rows[0]) == {"id", "at", "broker", "workflow", "version", "instance", "event", "step", "transaction"}
    assert "private reason" not in path.read_text() and rows[0]["at"].endswith("+00:00")
    assert [p.name for p in path.parent.iterdir()] == ["history.jsonl"]  # no temporary file left


def test_workflow_results_are_loaded_per_broker(tmp_path):
    run = AnalyticsRun.objects.create(state=RunState.SUCCEEDED)
    rows = {
        "brokers": [{"broker": "QM1", "committed": 3}],
        "workflow_hours": [{"broker": "QM2", "workflow": "w", "hour": "2025-05-01T12:00:00Z", "completed": 2}],
        "workflow_steps": [{"broker": "QM1", "workflow": "w", "step": "a", "committed": 2, "held": 1}],
        "compensations": [{"broker": "QM1", "workflow": "w", "step": "a", "compensated": 1}],
    }
    for name, items in rows.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "part-00000.json").write_text("".join(json.dumps(i) + "\n" for i in items))
    _load(run, tmp_path)
    qm1 = BrokerAnalytics.objects.get(broker="QM1").results
    assert qm1["workflow_steps"] == [{"workflow": "w", "step": "a", "committed": 2, "held": 1}]
    assert qm1["compensations"] == [{"workflow": "w", "step": "a", "compensated": 1}] and qm1["workflow_hours"] == []
    qm2 = BrokerAnalytics.objects.get(broker="QM2").results
    assert qm2["workflow_hours"] == [{"workflow": "w", "hour": "2025-05-01T12:00:00Z", "completed": 2}]
    assert qm2["broker"] == {} and qm2["queues"] == []


def test_workflow_results_are_served_over_rest(api, broker, tmp_path):
    run = AnalyticsRun.objects.create(state=RunState.SUCCEEDED)
    rows = {
        "workflow_hours": [{"broker": "QM1", "workflow": "w", "hour": "2025-05-01T12:00:00Z", "completed": 2}],
        "workflow_steps": [{"broker": "QM1", "workflow": "w", "step": "a", "committed": 2, "held": 1}],
        "compensations": [{"broker": "QM1", "workflow": "w", "step": "a", "compensated": 1}],
    }
    for name, items in rows.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "part-00000.json").write_text("".join(json.dumps(i) + "\n" for i in items))
    _load(run, tmp_path)
    body = api.get("/api/brokers/QM1/analytics/").json()
    assert body["workflow_hours"] == [{"workflow": "w", "hour": "2025-05-01T12:00:00Z", "completed": 2}]
    assert body["workflow_steps"] == [{"workflow": "w", "step": "a", "committed": 2, "held": 1}]
    assert body["compensations"] == [{"workflow": "w", "step": "a", "compensated": 1}]

"""Fan-out and fan-in, requests dead-lettered or backed out past their threshold, the
deadline, a compensation that cannot be done and its resubmission."""

from __future__ import annotations

from datetime import timedelta

import pytest

from brokers.services.messages import message_browse
from brokers.services.queues import queue_delete
from baton_client.errors import WorkflowConflict
from workflows.models import Instance
from workflows.services.definitions import workflow_define
from workflows.services.instances import compensation_resubmit, instance_start, step_complete, workflow_abort
from workflows.services.saga import workflows_sweep


def test_fan_out_then_a_join_that_takes_all_its_inputs_in_one_unit_of_work(wf):
    workflow_define(
        broker="WF",
        name="fan",
        steps=[
            {"name": "split", "queue": "A", "compensation_queue": "cA", "next": ["left", "right"]},
            {"name": "left", "queue": "B", "compensation_queue": "cB", "next": ["join"]},
            {"name": "right", "queue": "C", "compensation_queue": "cC", "next": ["join"]},
            {"name": "join", "queue": "D", "compensation_queue": "cD"},
        ],
    )
    instance = wf.hooks(instance_start, broker="WF", name="fan").pk
    wf.step("A")
    wf.step("B", output="left done")
    txn, got = wf.get("D")
    assert got[0].properties["workflow"]["inputs"] == 2
    with pytest.raises(WorkflowConflict, match="waits for its inputs: 1 of 2"):
        step_complete(instance_id=instance, step="join", transaction_id=txn)
    wf.rollback(txn)
    wf.step("C", output="right done")
    txn, first = wf.get("D")
    _, rest = wf.get("D", txn, correl_id=instance, batch=5)  # the other inputs, by the instance's correl_id
    assert sorted(bytes(m.body) for m in first + rest) == [b"left done", b"right done"]
    step_complete(instance_id=instance, step="join", transaction_id=txn)
    wf.commit(txn)
    view = wf.view(instance)
    assert view["state"] == "completed"
    assert view["compensation_path"][0] == "join" and view["compensation_path"][-1] == "split"


def test_a_join_completed_with_only_some_of_its_inputs_is_refused(wf):
    workflow_define(
        broker="WF",
        name="fan2",
        steps=[
            {"name": "split", "queue": "A", "compensation_queue": "cA", "next": ["left", "right"]},
            {"name": "left", "queue": "B", "compensation_queue": "cB", "next": ["join"]},
            {"name": "right", "queue": "C", "compensation_queue": "cC", "next": ["join"]},
            {"name": "join", "queue": "D", "compensation_queue": "cD"},
        ],
    )
    instance = wf.hooks(instance_start, broker="WF", name="fan2").pk
    wf.step("A")
    wf.step("B")
    wf.step("C")
    txn, _ = wf.get("D")
    with pytest.raises(WorkflowConflict, match="has not got"):
        step_complete(instance_id=instance, step="join", transaction_id=txn)
    assert wf.states(instance)["join"] == "in_flight"  # nothing changed: its request is still got


def test_a_step_request_backed_out_past_its_threshold_fails_the_instance(wf):
    workflow_define(
        broker="WF",
        name="dl",
        steps=[
            {"name": "a", "queue": "A", "compensation_queue": "cA"},
            {"name": "d", "queue": "D", "compensation_queue": "cD"},  # D: backout threshold 2
        ],
    )
    instance = wf.hooks(instance_start, broker="WF", name="dl").pk
    wf.step("A", compensation="undo a")
    for _ in range(2):
        txn, got = wf.get("D")
        assert got
        wf.rollback(txn)
    view = wf.view(instance)
    assert view["state"] == "compensating"
    assert "backed out 2 times (threshold 2)" in view["reason"]
    assert message_browse(broker="WF", queue="D").messages == []  # moved to the dead-letter queue
    _, _, msg = wf.compensate("cA")
    assert bytes(msg.body) == b"undo a"
    assert wf.view(instance)["state"] == "compensated"


def test_a_compensation_request_past_its_threshold_waits_for_a_person_then_resubmit(wf):
    instance = wf.hooks(instance_start, broker="WF", name="seq").pk
    wf.step("A", compensation="undo a")
    wf.hooks(workflow_abort, instance_id=instance)
    for _ in range(2):  # cA: threshold 2
        txn, _ = wf.get("cA")
        wf.rollback(txn)
    view = wf.view(instance)
    assert view["state"] == "compensation_failed"
    assert view["history"][-1]["event"] == "compensation_failed"
    wf.hooks(compensation_resubmit, instance_id=instance)
    assert wf.view(instance)["state"] == "compensating"
    _, _, msg = wf.compensate("cA")
    assert bytes(msg.body) == b"undo a"
    assert wf.view(instance)["state"] == "compensated"


def test_a_compensation_that_cannot_be_put_leaves_the_instance_compensation_failed(wf):
    instance = wf.hooks(instance_start, broker="WF", name="seq").pk
    wf.step("A")
    queue_delete(broker="WF", name="cA")
    wf.hooks(workflow_abort, instance_id=instance)
    view = wf.view(instance)
    assert view["state"] == "compensation_failed"
    assert "could not be put" in view["history"][-1]["detail"]


def test_the_deadline_fails_an_instance_that_stopped_making_progress(wf):
    workflow_define(
        broker="WF",
        name="slow",
        deadline_ms=60_000,
        steps=[
            {"name": "a", "queue": "A", "compensation_queue": "cA"},
            {"name": "b", "queue": "B", "compensation_queue": "cB"},
        ],
    )
    instance = wf.hooks(instance_start, broker="WF", name="slow").pk
    wf.step("A")
    assert wf.hooks(workflows_sweep)["deadline"] == 0
    Instance.objects.filter(pk=instance).update(
        progress_at=Instance.objects.get(pk=instance).progress_at - timedelta(minutes=2)
    )
    assert wf.hooks(workflows_sweep)["deadline"] == 1
    view = wf.view(instance)
    assert view["state"] == "compensating" and view["reason"] == "deadline"
    wf.compensate("cA")
    assert wf.view(instance)["state"] == "compensated"


def test_a_late_request_of_an_aborted_instance_is_refused_and_can_be_consumed(wf):
    instance = wf.hooks(instance_start, broker="WF", name="seq").pk
    wf.hooks(workflow_abort, instance_id=instance)
    assert wf.view(instance)["state"] == "compensated"
    txn, got = wf.get("A")
    with pytest.raises(WorkflowConflict, match="is compensated"):
        step_complete(instance_id=instance, step="a", transaction_id=txn)
    wf.commit(txn)  # the worker consumes it
    assert message_browse(broker="WF", queue="A").messages == []


def test_a_step_request_dead_lettered_through_a_peek_lock_fails_the_instance_at_the_sweep(wf):
    from brokers.services.locks import lock_dead_letter
    from brokers.services.messages import message_get

    instance = wf.hooks(instance_start, broker="WF", name="seq").pk
    wf.step("A", compensation="undo a")
    locked = message_get(broker="WF", queue="B", mode="peek_lock").messages[0]
    assert wf.hooks(workflows_sweep)["gone"] == 0  # locked, still on its queue
    lock_dead_letter(token=locked.lock_token, reason="poison")
    assert wf.hooks(workflows_sweep)["gone"] == 1
    view = wf.view(instance)
    assert view["state"] == "compensating" and "no longer on B" in view["reason"]
    wf.compensate("cA")
    assert wf.view(instance)["state"] == "compensated"

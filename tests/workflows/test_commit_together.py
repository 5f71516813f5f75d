"""A step completed and committed in one call (``step_complete(commit=True)``): the step
counts as committed in the database transaction that commits its unit of work, and the
next step's request is then on its queue; a refused completion commits nothing."""

from __future__ import annotations

import pytest

from brokers.services.message_input import MessageInput
from brokers.services.messages import message_browse, message_get
from transactions.models import Transaction
from baton_client.errors import WorkflowConflict
from workflows.models import InstanceStep
from workflows.services.instances import instance_start, step_compensated, step_complete, workflow_abort


def start(flow) -> str:
    return flow.hooks(instance_start, broker="WF", name="seq", message=MessageInput(body=b"claim")).pk


def got(queue: str, *, preemptive: bool = False):
    """A worker's get that begins its unit of work only if it takes a request."""
    result = message_get(broker="WF", queue=queue, syncpoint="yes", preemptive=preemptive)
    assert result.messages, f"no request on {queue}"
    return result.transaction_id, result.messages[0].properties["workflow"]


def complete(flow, txn: str, tag: dict, **kwargs):
    return flow.hooks(
        step_complete,
        instance_id=tag["instance"],
        step=tag["step"],
        transaction_id=txn,
        output=MessageInput(body=f"after {tag['step']}".encode()),
        compensation=MessageInput(body=f"undo {tag['step']}".encode()),
        **kwargs,
    )


def test_complete_and_commit_in_one_call_advances_the_instance(wf):
    instance = start(wf)
    txn, tag = got("A")
    row = complete(wf, txn, tag, commit=True)
    assert row.state == "committed"
    assert Transaction.objects.get(pk=txn).state == "committed"
    assert wf.states(instance) == {"a": "committed", "b": "pending", "c": "pending"}
    assert [bytes(m.body) for m in message_browse(broker="WF", queue="B").messages] == [b"after a"]
    for queue in "BC":
        txn, tag = got(queue)
        complete(wf, txn, tag, commit=True)
    view = wf.view(instance)
    assert view["state"] == "completed"
    assert [h["event"] for h in view["history"]].count("step_committed") == 3


def test_a_refused_completion_commits_nothing(wf):
    instance = start(wf)
    txn, tag = got("A")
    with pytest.raises(WorkflowConflict):
        complete(wf, txn, {**tag, "step": "b"}, commit=True)  # b's request was not got under it
    assert Transaction.objects.get(pk=txn).state == "active"  # the get stays in flight, uncommitted
    assert wf.states(instance)["a"] == "in_flight"
    assert message_browse(broker="WF", queue="B").messages == []
    complete(wf, txn, tag, commit=True)  # the unit of work goes on
    assert wf.states(instance)["a"] == "committed"


def test_a_step_taken_preemptively_is_held_then_commits_with_the_earlier_one(wf):
    instance = start(wf)
    first, tag = got("A")
    complete(wf, first, tag)  # a completed, not committed: b's request is uncommitted
    second, tag_b = got("B", preemptive=True)
    row = complete(wf, second, tag_b, commit=True)
    assert row.state == "held"
    assert Transaction.objects.get(pk=second).state == "commit_held"
    assert wf.states(instance)["b"] == "held"
    wf.commit(first)
    assert wf.states(instance) == {"a": "committed", "b": "committed", "c": "pending"}
    assert InstanceStep.objects.get(instance_id=instance, name="b").commit_order == 2


def test_a_compensation_reported_and_committed_in_one_call_issues_the_next(wf):
    instance = start(wf)
    for queue in "AB":
        txn, tag = got(queue)
        complete(wf, txn, tag, commit=True)
    wf.hooks(workflow_abort, instance_id=instance, reason="withdrawn")
    txn, tag = got("cB")
    row = wf.hooks(step_compensated, instance_id=instance, step=tag["step"], transaction_id=txn, commit=True)
    assert row.state == "compensated"
    assert [bytes(m.body) for m in message_browse(broker="WF", queue="cA").messages] == [b"undo a"]
    txn, tag = got("cA")
    wf.hooks(step_compensated, instance_id=instance, step=tag["step"], transaction_id=txn, commit=True)
    assert wf.view(instance)["state"] == "compensated"

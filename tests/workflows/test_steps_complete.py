"""Several steps completed in one call (``steps_complete``): a worker's batch of requests,
got under one unit of work, completed and committed in one database transaction, all or
none."""

from __future__ import annotations

import pytest

from brokers.services.message_input import MessageInput
from brokers.services.messages import message_browse, message_get
from transactions.models import Transaction
from baton_client.errors import WorkflowConflict
from workflows.models import StepRequest
from workflows.services.instances import Completion, instance_start, steps_complete, workflow_abort


def start(flow, body: str) -> str:
    return flow.hooks(instance_start, broker="WF", name="seq", message=MessageInput(body=body.encode())).pk


def batch_got(queue: str, n: int) -> tuple[str, list[dict]]:
    result = message_get(broker="WF", queue=queue, syncpoint="yes", batch=n)
    assert len(result.messages) == n
    return result.transaction_id, [m.properties["workflow"] for m in result.messages]


def completions(tags: list[dict]) -> list[Completion]:
    return [
        Completion(
            instance_id=t["instance"],
            step=t["step"],
            output=MessageInput(body=f"after {t['instance']}".encode()),
            compensation=MessageInput(body=b"undo"),
        )
        for t in tags
    ]


def test_a_batch_of_steps_completes_and_commits_in_one_call(wf):
    instances = [start(wf, f"claim {n}") for n in range(3)]
    txn, tags = batch_got("A", 3)
    rows = wf.hooks(steps_complete, transaction_id=txn, completions=completions(tags), commit=True)
    assert [r.state for r in rows] == ["committed"] * 3
    assert [r.instance_id for r in rows] == [t["instance"] for t in tags]  # in the order given
    assert Transaction.objects.get(pk=txn).state == "committed"
    for instance in instances:
        assert wf.states(instance) == {"a": "committed", "b": "pending", "c": "pending"}
    bodies = sorted(bytes(m.body) for m in message_browse(broker="WF", queue="B").messages)
    assert bodies == sorted(f"after {i}".encode() for i in instances)


def test_one_refused_completion_refuses_the_batch_and_commits_nothing(wf):
    instances = [start(wf, f"claim {n}") for n in range(2)]
    txn, tags = batch_got("A", 2)
    wf.hooks(workflow_abort, instance_id=tags[1]["instance"], reason="gone")  # no longer running
    with pytest.raises(WorkflowConflict):
        wf.hooks(steps_complete, transaction_id=txn, completions=completions(tags), commit=True)
    assert Transaction.objects.get(pk=txn).state == "active"  # nothing of the call was done
    assert wf.states(tags[0]["instance"])["a"] == "in_flight"  # its request taken, not completed
    assert message_browse(broker="WF", queue="B").messages == []
    rows = wf.hooks(steps_complete, transaction_id=txn, completions=completions(tags[:1]), commit=True)
    assert rows[0].state == "committed"  # the unit of work goes on: the running one completes
    assert tags[0]["instance"] in instances
    assert wf.states(tags[0]["instance"])["a"] == "committed"


def test_a_batch_puts_its_next_requests_a_call_per_queue_at_most_the_batch_limit_each(wf, settings):
    """The next steps' requests of a batch go in one put per queue, split at BATON_MAX_BATCH
    messages a put: every request is put and noted, each tagged with its own instance."""
    settings.BATON_MAX_BATCH = 2
    instances = [start(wf, f"claim {n}") for n in range(3)]
    txn, tags = batch_got("A", 2)
    more = message_get(broker="WF", queue="A", transaction_id=txn, batch=1)
    tags += [m.properties["workflow"] for m in more.messages]
    assert sorted(t["instance"] for t in tags) == sorted(instances)
    rows = wf.hooks(steps_complete, transaction_id=txn, completions=completions(tags), commit=True)
    assert [r.state for r in rows] == ["committed"] * 3
    queued = message_browse(broker="WF", queue="B").messages
    assert sorted((m.properties["workflow"]["instance"], bytes(m.body)) for m in queued) == sorted(
        (i, f"after {i}".encode()) for i in instances
    )
    assert {m.correl_id for m in queued} == set(instances)
    noted = set(StepRequest.objects.filter(step="b", open=True).values_list("instance_id", "msg_id"))
    assert noted == {(m.properties["workflow"]["instance"], m.msg_id) for m in queued}  # each its own message
    for instance in instances:
        assert wf.states(instance) == {"a": "committed", "b": "pending", "c": "pending"}

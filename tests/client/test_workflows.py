"""The Python client's workflow methods against a real platform, over the session and
REST: define, start, a worker that gets and completes under its unit of work, abort and the
compensation it issues (issued by the server when the abort and each compensation commit),
and the errors of the shared hierarchy."""
from __future__ import annotations

import pytest

from brokers.client import NotFound
from baton_client.errors import WorkflowConflict

pytestmark = pytest.mark.integration


def test_a_workflow_through_the_client(client, broker):
    for q in ("VALIDATE", "APPROVE", "UNVALIDATE", "UNAPPROVE"):
        client.define_queue(broker, q)
    client.define_workflow(broker, "claim", [
        {"name": "validate", "queue": "VALIDATE", "compensation_queue": "UNVALIDATE"},
        {"name": "approve", "queue": "APPROVE", "compensation_queue": "UNAPPROVE"},
    ])
    started = client.start_workflow(broker, "claim", "expense 42")
    instance = started["id"]
    with client.transaction(broker) as txn:
        request = txn.get("VALIDATE")
        assert request.properties["workflow"]["step"] == "validate"
        client.complete_step(instance, "validate", txn, output="valid", compensation={"body": "unvalidate 42"})
    with pytest.raises(WorkflowConflict):
        with client.transaction(broker) as txn:
            txn.get("APPROVE")
            client.complete_step(instance, "validate", txn)  # already committed
    shown = client.display_instance(instance)
    assert [s["state"] for s in shown["steps"]] == ["committed", "pending"]
    assert client.find_instances(broker, "claim", step="approve")["count"] == 1
    assert client.abort_instance(instance, "withdrawn")["state"] == "compensating"
    with client.transaction(broker) as txn:
        undo = txn.get("UNVALIDATE", wait=10)
        assert undo.text == "unvalidate 42" and undo.properties["workflow"]["compensation"] is True
        client.step_compensated(instance, "validate", txn)
    shown = client.display_instance(instance)
    assert shown["state"] == "compensated" and shown["history"][-1]["event"] == "compensated"
    with pytest.raises(NotFound):
        client.display_instance("0" * 48)
    client.delete_workflow(broker, "claim")
    assert client.list_workflows(broker) == []

"""The Python client's workflow methods against a real platform, over the session and
REST: define, start, a worker that gets and completes under its unit of work, abort and the
compensation it issues (issued by the server when the abort and each compensation commit),
and the errors of the shared hierarchy."""

from __future__ import annotations

import pytest

from baton_client import NotFound
from baton_client.errors import WorkflowConflict

pytestmark = [pytest.mark.integration, pytest.mark.once]  # once: its servers use SQLite in either pass


def test_a_workflow_through_the_client(client, broker):
    for q in ("VALIDATE", "APPROVE", "UNVALIDATE", "UNAPPROVE"):
        client.define_queue(broker, q)
    client.define_workflow(
        broker,
        "claim",
        [
            {"name": "validate", "queue": "VALIDATE", "compensation_queue": "UNVALIDATE"},
            {"name": "approve", "queue": "APPROVE", "compensation_queue": "UNAPPROVE"},
        ],
    )
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


def test_the_expense_claim_example(platform, client, transport):
    """examples/expense_claims.py as its docstring runs it: workers over the client, the
    manager's approval (and a rejection) from the command line."""
    if transport != "session":
        pytest.skip("the example runs over the session; once is enough")
    import sys
    from pathlib import Path

    from tests.integration.servers import manage

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
    try:
        import expense_claims as example
    finally:
        sys.path.pop(0)
    example.setup(client)
    example.setup(client)  # again: nothing changes
    approved = example.submit(client, "Conference hotel", 412.5)
    rejected = example.submit(client, "Taxi", 30)
    too_much = example.submit(client, "Yacht", 99_000)
    example.work(client, once=True)
    assert client.display_instance(too_much)["state"] == "compensated"  # validation failed: nothing to undo
    manage(platform.env, "complete_step", approved, "approve", "--compensation", "withdraw approval")
    manage(platform.env, "fail_step", rejected, "approve", "--reason", "no receipt")
    example.work(client, once=True)
    done = client.display_instance(approved)
    assert done["state"] == "completed" and [s["state"] for s in done["steps"]] == ["committed"] * 5
    undone = client.display_instance(rejected)
    assert undone["state"] == "compensated" and undone["reason"] == "no receipt"
    assert [s["state"] for s in undone["steps"]][:2] == ["compensated", "pending"]

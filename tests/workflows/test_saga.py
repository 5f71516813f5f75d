"""The saga on a real broker: steps follow their units of work (committed, backed out,
held, cascaded), compensations run newest committed first, one at a time."""

from __future__ import annotations

from brokers.services.message_input import MessageInput
from brokers.services.messages import message_browse
from workflows.services.instances import instance_start, step_fail, workflow_abort


def start(flow, body: str = "claim", **kwargs) -> str:
    return flow.hooks(instance_start, broker="WF", name="seq", message=MessageInput(body=body.encode()), **kwargs).pk


def test_a_workflow_runs_step_by_step_and_completes(wf):
    instance = start(wf)
    txn, tag = wf.step("A", output="validated")
    assert tag == {"instance": instance, "workflow": "seq", "step": "a", "compensation": False}
    assert wf.states(instance) == {"a": "committed", "b": "pending", "c": "pending"}
    _, got = wf.get("B")
    assert bytes(got[0].body) == b"validated" and got[0].correl_id == instance
    wf.rollback(_)
    wf.step("B")
    wf.step("C")
    view = wf.view(instance)
    assert view["state"] == "completed" and view["ended_at"]
    assert [h["event"] for h in view["history"]] == [
        "started",
        "step_completed",
        "step_committed",
        "step_completed",
        "step_committed",
        "step_completed",
        "step_committed",
        "completed",
    ]


def test_a_step_follows_its_unit_of_work(wf):
    instance = start(wf)
    txn, _ = wf.get("A")
    assert wf.states(instance)["a"] == "in_flight"  # its request got under an open unit of work
    wf.rollback(txn)
    assert wf.states(instance)["a"] == "pending"
    txn, tag = wf.step("A", commit=False)
    assert wf.view(instance)["steps"][0]["transaction"] == txn
    wf.rollback(txn)
    assert wf.states(instance) == {"a": "backed_out", "b": "pending", "c": "pending"}
    assert message_browse(broker="WF", queue="B").messages == []  # its output vanished with it
    wf.step("A")  # the request came back: done again
    assert wf.states(instance)["a"] == "committed"


def test_abort_compensates_committed_steps_newest_first_one_at_a_time(wf):
    instance = start(wf)
    wf.step("A", compensation="refund a")
    wf.step("B", compensation="refund b")
    in_flight, _ = wf.step("C", commit=False)
    wf.hooks(workflow_abort, instance_id=instance, reason="claim withdrawn")
    view = wf.view(instance)
    assert view["state"] == "compensating" and view["compensation_path"] == ["b", "a"]
    assert wf.states(instance)["c"] == "backed_out"  # uncommitted work needs no compensation
    assert message_browse(broker="WF", queue="cA").messages == []  # one at a time
    _, tag, msg = wf.compensate("cB")
    assert bytes(msg.body) == b"refund b" and tag["step"] == "b"
    assert wf.states(instance)["b"] == "compensated"
    _, tag, msg = wf.compensate("cA")
    assert bytes(msg.body) == b"refund a"
    view = wf.view(instance)
    assert view["state"] == "compensated"
    assert [s["state"] for s in view["steps"]] == ["compensated", "compensated", "backed_out"]
    assert message_browse(broker="WF", queue="cC").messages == []


def test_a_compensation_backed_out_is_done_again_not_twice(wf):
    instance = start(wf)
    wf.step("A")
    wf.hooks(workflow_abort, instance_id=instance)
    txn, _, _ = wf.compensate("cA", commit=False)
    wf.rollback(txn)
    assert wf.view(instance)["state"] == "compensating"
    wf.compensate("cA")
    assert wf.view(instance)["state"] == "compensated"
    assert [h["event"] for h in wf.view(instance)["history"]].count("compensation_requested") == 1


def test_a_step_taken_preemptively_backs_out_with_the_earlier_one_and_is_never_compensated(wf):
    instance = start(wf)
    first, _ = wf.step("A", commit=False)  # a's output is uncommitted
    second, _ = wf.step("B", preemptive=True, commit=False)
    assert wf.states(instance) == {"a": "in_flight", "b": "in_flight", "c": "pending"}
    wf.commit(second)  # held on a's unit of work
    assert wf.states(instance)["b"] == "held"
    assert wf.view(instance)["held"][0]["upstream"] == "a"
    wf.rollback(first)  # b backs out with it
    assert wf.states(instance) == {"a": "backed_out", "b": "backed_out", "c": "pending"}
    wf.hooks(workflow_abort, instance_id=instance)
    assert wf.view(instance)["state"] == "compensated"  # nothing committed, nothing to compensate


def test_a_held_step_commits_with_the_earlier_one_in_step_order(wf):
    instance = start(wf)
    first, _ = wf.step("A", commit=False)
    second, _ = wf.step("B", preemptive=True, commit=False)
    wf.commit(second)
    wf.commit(first)
    view = wf.view(instance)
    assert [(s["name"], s["state"], s["commit_order"]) for s in view["steps"][:2]] == [
        ("a", "committed", 1),
        ("b", "committed", 2),
    ]
    assert view["compensation_path"] == ["b", "a"]


def test_an_instance_started_under_a_unit_of_work_starts_only_if_it_commits(wf):
    txn = wf.begin()
    gone = start(wf, transaction_id=txn)
    wf.rollback(txn)
    from workflows.models import Instance

    assert not Instance.objects.filter(pk=gone).exists()
    assert message_browse(broker="WF", queue="A").messages == []
    txn = wf.begin()
    kept = start(wf, transaction_id=txn)
    wf.commit(txn)
    assert wf.view(kept)["transaction"] is None
    wf.step("A")
    assert wf.states(kept)["a"] == "committed"


def test_a_fail_under_a_unit_of_work_counts_only_if_it_commits(wf):
    instance = start(wf)
    wf.step("A")
    txn, messages = wf.get("B")
    wf.hooks(step_fail, instance_id=instance, step="b", reason="over budget", transaction_id=txn)
    wf.rollback(txn)
    assert wf.view(instance)["state"] == "running"
    txn, messages = wf.get("B")
    wf.hooks(step_fail, instance_id=instance, step="b", reason="over budget", transaction_id=txn)
    wf.commit(txn)
    view = wf.view(instance)
    assert view["state"] == "compensating" and view["reason"] == "over budget"
    assert message_browse(broker="WF", queue="B").messages == []  # the failed request was consumed
    wf.compensate("cA")
    assert wf.view(instance)["state"] == "compensated"

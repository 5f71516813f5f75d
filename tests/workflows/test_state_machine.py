"""A Hypothesis state machine against a plain model of the saga's semantics.

The model knows nothing of the implementation. Instances of a three-step workflow
(a → b → c) are driven by workers that get a step's request (normally, or pre-emptively
while the previous step's unit of work is open) and complete it under their unit of work,
which they commit or roll back; instances are aborted; compensation workers take the one
compensation request out, report it done and commit or roll back (a compensation request
backed out twice reaches its queue's threshold: the instance waits for a person, who
resubmits). The model's rules:

- a step counts as committed only when its unit of work commits; a commit held on an
  open upstream commits with it (upstream first) and backs out with it (cascade);
- an instance completes when every step has committed;
- an abort backs out every step still in flight; then the committed steps are compensated
  one at a time, newest committed first, each exactly once; the instance ends
  ``compensated`` when none is left.

After every rule the instance's state, each step's shown state, which compensation request
is out, and the order of compensations done must match the model.
"""

from __future__ import annotations

import itertools

import pytest
from django.db import transaction as db
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule, run_state_machine_as_test

from brokers.services.brokers import broker_define
from brokers.services.message_input import MessageInput
from brokers.services.messages import message_get
from brokers.services.queues import queue_define
from tests.passes import examples
from transactions.manager import transaction_begin, transaction_commit, transaction_rollback
from workflows.models import InstanceHistory, StepRequest
from workflows.selectors import instance_get, instance_view
from workflows.services.definitions import workflow_define
from workflows.services.instances import (
    compensation_resubmit,
    instance_start,
    step_compensated,
    step_complete,
    workflow_abort,
)

STEPS = ["a", "b", "c"]
QUEUE = {"a": "A", "b": "B", "c": "C"}
THRESHOLD = 2  # of the compensation queues
_brokers = itertools.count(1)


class SagaMachine(RuleBasedStateMachine):
    hooks = None  # set by the test: runs a call and then what waits for its database commit

    def __init__(self) -> None:
        super().__init__()
        self.savepoint = db.savepoint()
        self.broker = f"SG{next(_brokers)}"
        broker_define(name=self.broker, transaction_timeout_ms=600_000)
        for q in "ABC":
            queue_define(broker=self.broker, name=q)
            queue_define(broker=self.broker, name=f"c{q}", backout_threshold=THRESHOLD)
        workflow_define(
            broker=self.broker,
            name="w",
            steps=[{"name": s, "queue": QUEUE[s], "compensation_queue": f"c{QUEUE[s]}"} for s in STEPS],
        )
        self.instances: list[dict] = []
        self.txns: dict[str, dict] = {}  # open units of work: kind, instance, step, upstream, held

    def teardown(self) -> None:
        db.savepoint_rollback(self.savepoint)

    # --- the model ------------------------------------------------------------------------

    def _new_instance(self, instance_id: str) -> dict:
        return {
            "id": instance_id,
            "state": "running",
            "steps": dict.fromkeys(STEPS, "pending"),
            "request": {"a": None} | dict.fromkeys(STEPS[1:], "none"),  # None: committed, else its putter
            "completing": {},
            "commits": [],
            "compensated": [],
            "out": None,
            "backouts": 0,
        }

    def _workable(self, preemptive: bool) -> list[tuple[dict, str]]:
        found = []
        for inst in self.instances:
            if inst["state"] != "running":
                continue
            for s in STEPS:
                put = inst["request"][s]
                if inst["steps"][s] in ("pending", "backed_out") and s not in inst["completing"] and put != "none":
                    if (put is None) != preemptive:
                        found.append((inst, s))
        return found

    def _commit_model(self, txn_id: str) -> None:
        t = self.txns[txn_id]
        if t["upstream"] in self.txns:
            t["held"] = True
            return
        del self.txns[txn_id]
        inst = t["instance"]
        if t["kind"] == "step":
            step = t["step"]
            inst["completing"].pop(step)
            inst["steps"][step] = "committed"
            inst["commits"].append(step)
            nxt = STEPS.index(step) + 1
            if nxt < len(STEPS):
                inst["request"][STEPS[nxt]] = None
            if all(v == "committed" for v in inst["steps"].values()):
                inst["state"] = "completed"
        else:
            inst["steps"][t["step"]] = "compensated"
            inst["compensated"].append(t["step"])
            inst["out"] = None
            self._advance(inst)
        for other_id, other in list(self.txns.items()):
            if other["upstream"] == txn_id:
                other["upstream"] = None
                if other["held"]:
                    self._commit_model(other_id)

    def _rollback_model(self, txn_id: str) -> None:
        for other_id, other in list(self.txns.items()):
            if other["upstream"] == txn_id and other_id in self.txns:
                self._rollback_model(other_id)
        t = self.txns.pop(txn_id)
        inst = t["instance"]
        if t["kind"] == "step":
            step = t["step"]
            inst["completing"].pop(step)
            inst["steps"][step] = "backed_out"
            nxt = STEPS.index(step) + 1
            if nxt < len(STEPS):
                inst["request"][STEPS[nxt]] = "none"
        else:
            inst["backouts"] += 1
            if inst["backouts"] >= THRESHOLD:
                inst["state"] = "compensation_failed"
                inst["out"] = "dead"

    def _advance(self, inst: dict) -> None:
        if inst["state"] != "compensating" or inst["out"] is not None:
            return
        left = [s for s in inst["commits"] if s not in inst["compensated"]]
        if not left:
            inst["state"] = "compensated"
            return
        inst["out"] = left[-1]
        inst["backouts"] = 0
        inst["steps"][left[-1]] = "compensating"

    # --- rules ----------------------------------------------------------------------------

    def _begin(self) -> str:
        return transaction_begin(broker=self.broker, timeout_ms=600_000).id

    @rule()
    def start(self) -> None:
        instance = self.hooks(instance_start, broker=self.broker, name="w", message=MessageInput(body=b"go"))
        self.instances.append(self._new_instance(instance.pk))

    @precondition(lambda self: self._workable(False) or self._workable(True))
    @rule(
        pick=st.integers(0, 99),
        preemptive=st.booleans(),
        then=st.sampled_from(["commit", "commit", "rollback", "leave open"]),
    )
    def work(self, pick: int, preemptive: bool, then: str = "leave open") -> None:
        if not self._workable(preemptive):
            preemptive = not preemptive
        candidates = self._workable(preemptive)
        inst, step = candidates[pick % len(candidates)]
        txn = self._begin()
        got = message_get(
            broker=self.broker, queue=QUEUE[step], transaction_id=txn, correl_id=inst["id"], preemptive=preemptive
        ).messages
        assert len(got) == 1 and got[0].properties["workflow"]["step"] == step
        step_complete(
            instance_id=inst["id"],
            step=step,
            transaction_id=txn,
            output=MessageInput(body=b"out"),
            compensation=MessageInput(body=f"undo {step}".encode()),
        )
        upstream = inst["request"][step]
        self.txns[txn] = {"kind": "step", "instance": inst, "step": step, "upstream": upstream, "held": False}
        inst["completing"][step] = txn
        if then != "leave open":
            self.resolve_one(txn, then == "commit")

    @precondition(lambda self: self.txns)
    @rule(pick=st.integers(0, 99), commit=st.booleans())
    def resolve(self, pick: int, commit: bool) -> None:
        choices = sorted(t for t, v in self.txns.items() if not v["held"] or not commit) or sorted(self.txns)
        txn = choices[pick % len(choices)]
        commit = commit and not self.txns[txn]["held"]
        if commit:
            outcome = self.hooks(transaction_commit, transaction_id=txn)
            self._commit_model(txn)
            assert (outcome.state == "commit_held") == (txn in self.txns)
        else:
            self.hooks(transaction_rollback, transaction_id=txn)
            self._rollback_model(txn)

    @precondition(lambda self: any(i["state"] == "running" for i in self.instances))
    @rule(pick=st.integers(0, 99))
    def abort(self, pick: int) -> None:
        running = [i for i in self.instances if i["state"] == "running"]
        inst = running[pick % len(running)]
        self.hooks(workflow_abort, instance_id=inst["id"], reason="test")
        for txn_id in sorted(inst["completing"].values()):
            if txn_id in self.txns:
                self._rollback_model(txn_id)
        inst["state"] = "compensating"
        self._advance(inst)

    def _out(self) -> list[dict]:
        return [i for i in self.instances if i["out"] not in (None, "dead")]

    @precondition(lambda self: self._out())
    @rule(pick=st.integers(0, 99), commit=st.booleans())
    def compensate(self, pick: int, commit: bool) -> None:
        out = self._out()
        inst = out[pick % len(out)]
        step = inst["out"]
        txn = self._begin()
        got = message_get(
            broker=self.broker, queue=f"c{QUEUE[step]}", transaction_id=txn, correl_id=inst["id"]
        ).messages
        assert len(got) == 1, f"one compensation request for {step} is out"
        assert got[0].properties["workflow"] == {
            "instance": inst["id"],
            "workflow": "w",
            "step": step,
            "compensation": True,
        }
        assert bytes(got[0].body) == f"undo {step}".encode()
        step_compensated(instance_id=inst["id"], step=step, transaction_id=txn)
        self.txns[txn] = {"kind": "comp", "instance": inst, "step": step, "upstream": None, "held": False}
        self.resolve_one(txn, commit)

    def resolve_one(self, txn: str, commit: bool) -> None:
        if commit:
            outcome = self.hooks(transaction_commit, transaction_id=txn)
            self._commit_model(txn)
            assert (outcome.state == "commit_held") == (txn in self.txns)
        else:
            self.hooks(transaction_rollback, transaction_id=txn)
            self._rollback_model(txn)

    @precondition(lambda self: any(i["state"] == "compensation_failed" for i in self.instances))
    @rule(pick=st.integers(0, 99))
    def resubmit(self, pick: int) -> None:
        failed = [i for i in self.instances if i["state"] == "compensation_failed"]
        inst = failed[pick % len(failed)]
        self.hooks(compensation_resubmit, instance_id=inst["id"])
        inst["state"], inst["backouts"] = "compensating", 0
        inst["out"] = [s for s in inst["commits"] if s not in inst["compensated"]][-1]

    # --- what must agree ------------------------------------------------------------------

    @invariant()
    def agrees(self) -> None:
        for inst in self.instances:
            view = instance_view(instance_get(instance_id=inst["id"]))
            assert view["state"] == inst["state"], (view["history"], inst)
            expected = {}
            for s in STEPS:
                if s in inst["completing"]:
                    expected[s] = "held" if self.txns[inst["completing"][s]]["held"] else "in_flight"
                else:
                    expected[s] = inst["steps"][s]
            assert {s["name"]: s["state"] for s in view["steps"]} == expected, view["history"]
            assert view["compensation_path"] == list(reversed(inst["commits"]))
            done = [h.step for h in InstanceHistory.objects.filter(instance_id=inst["id"], event="step_compensated")]
            assert done == inst["compensated"]
            out = list(
                StepRequest.objects.filter(instance_id=inst["id"], compensation=True, open=True).values_list(
                    "step", flat=True
                )
            )
            assert out == ([inst["out"]] if inst["out"] not in (None, "dead") else [])


@pytest.mark.django_db
def test_the_saga_agrees_with_its_model(hooks):
    SagaMachine.hooks = staticmethod(hooks)
    run_state_machine_as_test(
        SagaMachine,
        settings=settings(
            max_examples=examples(6, postgres=3),
            stateful_step_count=20,
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
        ),
    )

"""Workflows on a real broker: queues, units of work and the ordinary get, put, commit and
rollback; the saga's follow-up work (which runs when a database transaction commits) is run
as it would be, inside the test's own transaction."""

from __future__ import annotations

import pytest

from brokers.services.brokers import broker_define
from brokers.services.message_input import MessageInput
from brokers.services.messages import message_get
from brokers.services.queues import queue_define
from transactions.manager import transaction_begin, transaction_commit, transaction_rollback
from workflows.selectors import instance_get, instance_view
from workflows.services.definitions import workflow_define
from workflows.services.instances import step_compensated, step_complete


@pytest.fixture
def hooks(django_capture_on_commit_callbacks):
    """Run what waits for a database commit (the saga's next compensation) at once."""

    class Hooks:
        def __call__(self, fn, *args, **kwargs):
            with django_capture_on_commit_callbacks(execute=True):
                return fn(*args, **kwargs)

    return Hooks()


@pytest.fixture
def wf(db, hooks):
    """Broker WF with queues A B C D (backout threshold 2 on D) and their compensation
    queues cA..cD, and a workflow ``seq`` of steps a → b → c."""
    broker_define(name="WF", transaction_timeout_ms=600_000)
    for q in "ABCD":
        queue_define(broker="WF", name=q, backout_threshold=2 if q == "D" else 0)
        queue_define(broker="WF", name=f"c{q}", backout_threshold=2)
    workflow_define(
        broker="WF",
        name="seq",
        steps=[{"name": n, "queue": n.upper(), "compensation_queue": f"c{n.upper()}"} for n in "abc"],
    )
    return Flow(hooks)


class Flow:
    def __init__(self, hooks) -> None:
        self.hooks = hooks

    def begin(self) -> str:
        return transaction_begin(broker="WF", timeout_ms=600_000).id

    def get(self, queue: str, txn: str | None = None, *, preemptive: bool = False, batch: int = 1, **match):
        txn = txn or self.begin()
        got = message_get(broker="WF", queue=queue, transaction_id=txn, preemptive=preemptive, batch=batch, **match)
        return txn, got.messages

    def commit(self, txn: str):
        return self.hooks(transaction_commit, transaction_id=txn)

    def rollback(self, txn: str, reason: str = "client"):
        return self.hooks(transaction_rollback, transaction_id=txn, reason=reason)

    def step(
        self,
        queue: str,
        *,
        commit: bool = True,
        preemptive: bool = False,
        output: str = "out",
        compensation: str | None = None,
    ):
        """A worker: get a request under a new unit of work, complete its step, commit."""
        txn, messages = self.get(queue, preemptive=preemptive)
        assert messages, f"no request on {queue}"
        tag = messages[0].properties["workflow"]
        step_complete(
            instance_id=tag["instance"],
            step=tag["step"],
            transaction_id=txn,
            output=MessageInput(body=output.encode()),
            compensation=MessageInput(body=(compensation or f"undo {tag['step']}").encode()),
        )
        if commit:
            self.commit(txn)
        return txn, tag

    def compensate(self, queue: str, *, commit: bool = True):
        txn, messages = self.get(queue)
        assert messages, f"no compensation request on {queue}"
        tag = messages[0].properties["workflow"]
        assert tag["compensation"] is True
        step_compensated(instance_id=tag["instance"], step=tag["step"], transaction_id=txn)
        if commit:
            self.commit(txn)
        return txn, tag, messages[0]

    def view(self, instance_id: str) -> dict:
        return instance_view(instance_get(instance_id=instance_id))

    def states(self, instance_id: str) -> dict[str, str]:
        return {s["name"]: s["state"] for s in self.view(instance_id)["steps"]}

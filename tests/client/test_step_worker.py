"""The client's step worker (``baton_client.StepWorker``) against a real platform, over the
session and REST: functions registered per step and per compensation serve a workflow's
instances (in batches, several threads, pre-emptively), a function that raises is retried
until its queue's backout threshold fails the instance, whose committed steps the worker's
compensation functions then undo; it stops cleanly.

Each test waits for what it expects with a get that the platform wakes (a step function puts
on ``DONE`` under the request's unit of work, so the put is there once the step commits)."""

from __future__ import annotations

import threading

import pytest

from baton_client import Output, StepRequest, StepWorker

pytestmark = [pytest.mark.integration, pytest.mark.once]  # once: its servers use SQLite in either pass


def _define(client, broker: str, name: str, steps: str = "abc") -> None:
    for s in steps:
        client.define_queue(broker, f"{name}.{s}".upper(), backout_threshold=2, backout_queue="BACKOUT")
        client.define_queue(broker, f"{name}.UNDO.{s}".upper())
    client.define_workflow(
        broker,
        name,
        [{"name": s, "queue": f"{name}.{s}".upper(), "compensation_queue": f"{name}.UNDO.{s}".upper()} for s in steps],
    )


@pytest.fixture
def done(client, broker):
    client.define_queue(broker, "DONE")
    client.define_queue(broker, "BACKOUT")

    def wait_for(n: int) -> list[str]:
        got = []
        while len(got) < n:
            message = client.get(broker, "DONE", wait=30)
            assert message is not None, f"{len(got)} of {n} done after 30 s"
            got.append(message.text)
        return got

    return wait_for


@pytest.mark.parametrize("preemptive", [False, True], ids=["normal", "preemptive"])
def test_a_worker_serves_every_step_of_many_instances(client, broker, done, preemptive):
    _define(client, broker, "claim")
    worker = StepWorker(client, broker=broker, workflow="claim", threads=2, batch=3, preemptive=preemptive)
    seen: list[tuple[str, str]] = []
    lock = threading.Lock()

    def step(request: StepRequest) -> Output:
        with lock:
            seen.append((request.step, request.text))
        if request.step == "c":
            client.put(broker, "DONE", request.instance, transaction=request.transaction)
        return Output(output=f"{request.text}+{request.step}", compensation=f"undo {request.step}")

    for s in "abc":
        worker.step(s)(step)
    instances = [client.start_workflow(broker, "claim", f"claim {n}")["id"] for n in range(8)]
    with worker:
        assert sorted(done(8)) == sorted(instances)
    assert not worker.running
    for instance in instances:
        assert client.display_instance(instance)["state"] == "completed"
    assert sorted(t for s, t in seen if s == "c") == sorted(f"claim {n}+a+b" for n in range(8))
    assert worker.completed == 24 and worker.failures == 0


def test_a_step_that_raises_is_retried_then_its_instance_is_compensated(client, broker, done):
    _define(client, broker, "pay", steps="ab")
    worker = StepWorker(client, broker=broker, workflow="pay", backoff=0.01)
    tries: dict[str, list[int]] = {}

    @worker.step("a")
    def reserve(request: StepRequest) -> Output:
        return Output(output="reserved", compensation={"body": f"release {request.text}", "priority": 3})

    @worker.step("b")
    def charge(request: StepRequest) -> Output:
        tries.setdefault(request.instance, []).append(request.backout_count)
        raise RuntimeError("card declined")

    @worker.compensation("a")
    def release(request: StepRequest) -> None:
        assert request.compensation and request.step == "a"
        client.put(broker, "DONE", request.text, transaction=request.transaction)

    instance = client.start_workflow(broker, "pay", "order 7")["id"]
    with worker:
        assert done(1) == ["release order 7"]  # the compensation's body, as step a recorded it
    assert tries[instance] == [0, 1]  # retried once, then its queue's threshold (2) moved it
    shown = client.display_instance(instance)
    assert shown["state"] == "compensated"
    assert [s["state"] for s in shown["steps"]] == ["compensated", "pending"]  # b never completed
    assert "request_dead_lettered" in [h["event"] for h in shown["history"]]
    assert client.get(broker, "BACKOUT").properties["workflow"]["step"] == "b"
    assert worker.failures == 2


def test_a_worker_stops_cleanly_and_names_unknown_steps(client, broker):
    _define(client, broker, "idle", steps="a")
    worker = StepWorker(client, broker=broker, workflow="idle", threads=3, wait=0.5)
    worker.step("a")(lambda request: None)
    worker.start()
    assert worker.running
    worker.stop()
    assert not worker.running
    unknown = StepWorker(client, broker=broker, workflow="idle")
    unknown.step("zz")(lambda request: None)
    with pytest.raises(ValueError, match="no step 'zz'"):
        unknown.start()
    with pytest.raises(RuntimeError):
        StepWorker(client, broker=broker, workflow="idle").start()  # nothing registered


def test_the_order_saga_example(client, transport):
    """examples/order_saga.py: an order shipped, one declined (StepFailed) and compensated."""
    if transport != "session":
        pytest.skip("the example runs over the session; once is enough")
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
    try:
        import order_saga
    finally:
        sys.path.pop(0)
    order_saga.setup(client)
    order_saga.setup(client)  # again: changes nothing
    shipped = order_saga.submit(client, "widget", 3, 120.0)
    declined = order_saga.submit(client, "widget", 1, 9999.0)
    with order_saga.worker(client, threads=2):
        assert client.get(order_saga.BROKER, "ORDERS.SHIPPED", wait=30).text == shipped
        assert client.get(order_saga.BROKER, "ORDERS.CANCELLED", wait=30).text == declined
    assert client.display_instance(shipped)["state"] == "completed"
    shown = client.display_instance(declined)
    assert shown["state"] == "compensated"
    assert [s["state"] for s in shown["steps"]] == ["compensated", "pending", "pending"]
    assert "card declined" in shown["reason"]

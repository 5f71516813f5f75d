"""The scenarios of ``manage.py benchmark_workflows`` (run in its child process, on the
scratch database): instances of a four-step workflow completed per second with the step
workers getting normally and pre-emptively, at 1 ms and 5 ms of work per step; each step's
latency (its worker's get to its commit's answer, a held commit included); and the time
from ``abort`` to ``compensated`` for an instance with four committed steps."""

from __future__ import annotations

import statistics
import threading
import time

from django.db import connections

from brokers.services.brokers import broker_define
from brokers.services.message_input import MessageInput
from brokers.services.messages import message_get
from brokers.services.queues import queue_define
from transactions.manager import transaction_begin, transaction_commit, transaction_rollback
from workflows.models import Instance, InstanceState, InstanceStep, StepState
from workflows.services.definitions import workflow_define
from workflows.services.instances import instance_start, step_compensated, step_complete, workflow_abort
from workflows.services.saga import instances_advance

STEPS = ["s1", "s2", "s3", "s4"]


def _percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))] if ordered else 0.0


def _define(broker: str) -> None:
    broker_define(name=broker, transaction_timeout_ms=120_000)
    for s in STEPS:
        queue_define(broker=broker, name=s.upper(), max_depth=1_000_000)
        queue_define(broker=broker, name=f"UNDO.{s.upper()}", max_depth=1_000_000)
    steps = [{"name": s, "queue": s.upper(), "compensation_queue": f"UNDO.{s.upper()}"} for s in STEPS]
    workflow_define(broker=broker, name="bench", steps=steps)
    # the same four steps and a fifth that no worker serves: it stays running with four committed
    queue_define(broker=broker, name="PARKED", max_depth=1_000_000)
    workflow_define(
        broker=broker,
        name="parked",
        steps=[*steps, {"name": "parked", "queue": "PARKED", "compensation_queue": "PARKED"}],
    )


def _worker(
    *,
    broker: str,
    queue: str,
    stop: threading.Event,
    work_s: float,
    preemptive: bool,
    latencies: list[float],
    compensation: bool = False,
) -> None:
    try:
        while not stop.is_set():
            txn = transaction_begin(broker=broker, timeout_ms=120_000).id
            began = time.perf_counter()
            got = message_get(broker=broker, queue=queue, transaction_id=txn, preemptive=preemptive, wait=0.2).messages
            if not got:
                transaction_rollback(transaction_id=txn)
                continue
            tag = got[0].properties["workflow"]
            time.sleep(work_s)
            if compensation:
                step_compensated(instance_id=tag["instance"], step=tag["step"], transaction_id=txn)
            else:
                step_complete(
                    instance_id=tag["instance"],
                    step=tag["step"],
                    transaction_id=txn,
                    output=MessageInput(body=b"out"),
                    compensation=MessageInput(body=b"undo"),
                )
            transaction_commit(transaction_id=txn, wait=60)
            instances_advance(instance_ids=[tag["instance"]])  # as the commit's hook would, on a platform
            latencies.append(time.perf_counter() - began)
    finally:
        connections.close_all()


def _throughput(*, broker: str, instances: int, work_ms: float, preemptive: bool) -> dict:
    ids = [instance_start(broker=broker, name="bench", message=MessageInput(body=b"go")).pk for _ in range(instances)]
    stop, latencies = threading.Event(), []
    threads = [
        threading.Thread(
            target=_worker,
            kwargs={
                "broker": broker,
                "queue": s.upper(),
                "stop": stop,
                "work_s": work_ms / 1000,
                "preemptive": preemptive,
                "latencies": latencies,
            },
        )
        for s in STEPS
    ]
    started = time.perf_counter()
    for t in threads:
        t.start()
    while Instance.objects.filter(pk__in=ids).exclude(state=InstanceState.COMPLETED).exists():
        time.sleep(0.01)  # polling interval of the measuring loop
    elapsed = time.perf_counter() - started
    stop.set()
    for t in threads:
        t.join()
    return {
        "scenario": f"{'pre-emptive' if preemptive else 'normal'} gets, {work_ms:g} ms of work per step",
        "instances": instances,
        "instances_per_s": instances / elapsed,
        "step_p50_ms": _percentile(latencies, 50) * 1000,
        "step_p99_ms": _percentile(latencies, 99) * 1000,
    }


def _abort_to_compensated(*, broker: str, rounds: int) -> dict:
    times = []
    stop, ignored = threading.Event(), []
    forward = [
        threading.Thread(
            target=_worker,
            kwargs={
                "broker": broker,
                "queue": s.upper(),
                "stop": stop,
                "work_s": 0,
                "preemptive": False,
                "latencies": ignored,
            },
        )
        for s in STEPS
    ]
    undo = [
        threading.Thread(
            target=_worker,
            kwargs={
                "broker": broker,
                "queue": f"UNDO.{s.upper()}",
                "stop": stop,
                "work_s": 0,
                "preemptive": False,
                "latencies": ignored,
                "compensation": True,
            },
        )
        for s in STEPS
    ]
    for t in forward + undo:
        t.start()
    try:
        for _ in range(rounds):
            instance = instance_start(broker=broker, name="parked", message=MessageInput(body=b"go")).pk
            while InstanceStep.objects.filter(instance_id=instance, state=StepState.COMMITTED).count() < len(STEPS):
                time.sleep(0.002)  # polling interval of the measuring loop
            started = time.perf_counter()
            workflow_abort(instance_id=instance, reason="benchmark")
            while Instance.objects.get(pk=instance).state != InstanceState.COMPENSATED:
                time.sleep(0.001)
            times.append(time.perf_counter() - started)
    finally:
        stop.set()
        for t in forward + undo:
            t.join()
    return {
        "scenario": "abort to compensated, 4 committed steps",
        "rounds": rounds,
        "p50_ms": statistics.median(times) * 1000,
        "p99_ms": _percentile(times, 99) * 1000,
        "max_ms": max(times) * 1000,
    }


def run(*, instances: int, rounds: int, broker: str) -> dict:
    _define(broker)
    _throughput(broker=broker, instances=max(5, instances // 10), work_ms=1, preemptive=False)  # warm up
    results = []
    for work_ms in (1, 5):
        for preemptive in (False, True):
            results.append(_throughput(broker=broker, instances=instances, work_ms=work_ms, preemptive=preemptive))
    for work_ms in (1, 5):
        normal, pre = [r for r in results if r["scenario"].endswith(f"{work_ms:g} ms of work per step")]
        pre["ratio_to_normal"] = pre["instances_per_s"] / normal["instances_per_s"]
    return {"throughput": results, "compensation": _abort_to_compensated(broker=broker, rounds=rounds)}

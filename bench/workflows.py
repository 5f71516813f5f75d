"""The scenarios of ``manage.py benchmark_workflows``: a four-step workflow served by step
workers of the Python client (``baton_client.StepWorker``, one per step, each with its own
session) through a server on the scratch database.

- instances completed per second, the workers getting normally and pre-emptively, at 1 ms
  and 5 ms of work per step (rounds alternated, medians reported);
- how many requests a worker's unit of work took, on average (``--batch`` at most);
- each step's latency: from the get that took its request to the answer of the call that
  completed and committed it (held: answered; the commit then happens with its upstream's);
- the time from ``abort`` to ``compensated`` for an instance with four committed steps (a
  fifth step that no worker serves keeps it running);
- CPU seconds per step from /proc: the server's process and this one's (the workers); and
  the server's per start (each round's instances are started before its workers run);
  database transactions per step are two (the get that begins the unit of work; the
  completion and commit), and no call polls: gets and the measuring loop wait on wake-ups.

The setup (``define``) runs in the benchmark's child process on the scratch database; the
rest here, over HTTP, so it imports no model."""

from __future__ import annotations

import statistics
import time
from typing import Callable

STEPS = ["s1", "s2", "s3", "s4"]
DONE, UNDONE = "DONE", "UNDONE"


def define(broker: str) -> None:
    """The benchmark's broker, queues and workflows (in the child, on the scratch database)."""
    from brokers.services.brokers import broker_define
    from brokers.services.queues import queue_define
    from workflows.services.definitions import workflow_define

    broker_define(name=broker, transaction_timeout_ms=120_000)
    for s in STEPS:
        queue_define(broker=broker, name=s.upper(), max_depth=1_000_000)
        queue_define(broker=broker, name=f"UNDO.{s.upper()}", max_depth=1_000_000)
    for q in (DONE, UNDONE, "PARKED"):
        queue_define(broker=broker, name=q, max_depth=1_000_000)
    steps = [{"name": s, "queue": s.upper(), "compensation_queue": f"UNDO.{s.upper()}"} for s in STEPS]
    workflow_define(broker=broker, name="bench", steps=steps)
    # the same four steps and a fifth that no worker serves: it stays running with four committed
    workflow_define(
        broker=broker,
        name="parked",
        steps=[*steps, {"name": "parked", "queue": "PARKED", "compensation_queue": "PARKED"}],
    )


def _percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))] if ordered else 0.0


def _timed_worker(step_worker_class):
    class TimedWorker(step_worker_class):
        """A StepWorker that notes each unit of work's latency (its get's answer to its
        commit's) for every step it served."""

        latencies: list[float]
        units: int

        def _work(self, handler, messages, transaction):
            began = time.perf_counter()
            ok = super()._work(handler, messages, transaction)
            self.latencies.extend([time.perf_counter() - began] * len(messages))
            self.units += 1
            return ok

    return TimedWorker


class Bench:
    def __init__(self, *, base_url: str, token: str, broker: str, server_cpu: Callable[[], float], batch: int) -> None:
        from baton_client import Client, StepWorker

        self.base_url, self.token, self.broker = base_url, token, broker
        self.server_cpu = server_cpu
        self.batch = batch
        self.Client = Client
        self.Worker = _timed_worker(StepWorker)
        self.client = Client(base_url, token, timeout=120)

    def close(self) -> None:
        self.client.close()

    def _workers(self, *, work_s: float, preemptive: bool, last_to: str | None = DONE, compensations: bool = False):
        """One worker per step (and per compensation), each with its own client (session)."""
        from baton_client import Output

        workers = []

        def step_function(step: str, client):
            def serve(request):
                if work_s:
                    time.sleep(work_s)
                if step == STEPS[-1] and request.workflow == "bench" and last_to:
                    # the measuring loop's wake-up: this put commits with the step
                    client.put(self.broker, last_to, request.instance, transaction=request.transaction)
                return Output(output=b"out", compensation=b"undo")

            return serve

        def undo_function(step: str, client):
            def undo(request):
                if step == STEPS[0]:  # the last compensation: tell the measuring loop
                    client.put(self.broker, UNDONE, request.instance, transaction=request.transaction)

            return undo

        for s in STEPS:
            client = self.Client(self.base_url, self.token, timeout=120)
            worker = self.Worker(
                client, broker=self.broker, workflow="bench", batch=self.batch, preemptive=preemptive, wait=1.0
            )
            worker.latencies, worker.units = [], 0
            worker.step(s)(step_function(s, client))
            if compensations:
                worker.compensation(s)(undo_function(s, client))
            workers.append((client, worker))
        return workers

    def _drain(self, queue: str, n: int, timeout_s: float = 300) -> None:
        got = 0
        deadline = time.monotonic() + timeout_s
        while got < n:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{got} of {n} on {queue} after {timeout_s:g} s")
            got += len(self.client.get(self.broker, queue, batch=min(1000, n - got), wait=5))

    def throughput(self, *, instances: int, work_ms: float, preemptive: bool) -> dict:
        start_server0 = self.server_cpu()
        for _ in range(instances):
            self.client.start_workflow(self.broker, "bench", "go")
        start_server = self.server_cpu() - start_server0
        workers = self._workers(work_s=work_ms / 1000, preemptive=preemptive)
        cpu0, server0 = time.process_time(), self.server_cpu()
        started = time.perf_counter()
        for _, w in workers:
            w.start()
        self._drain(DONE, instances)
        elapsed = time.perf_counter() - started
        cpu, server = time.process_time() - cpu0, self.server_cpu() - server0
        for client, w in workers:
            w.stop()
            client.close()
        latencies = [x for _, w in workers for x in w.latencies]
        units = sum(w.units for _, w in workers)
        steps = instances * len(STEPS)
        return {
            "scenario": f"{'pre-emptive' if preemptive else 'normal'} gets, {work_ms:g} ms of work per step",
            "preemptive": preemptive,
            "work_ms": work_ms,
            "instances": instances,
            "instances_per_s": instances / elapsed,
            "step_p50_ms": _percentile(latencies, 50) * 1000,
            "step_p99_ms": _percentile(latencies, 99) * 1000,
            "server_cpu_ms_per_step": server * 1000 / steps,
            "workers_cpu_ms_per_step": cpu * 1000 / steps,
            "server_cpu_ms_per_start": start_server * 1000 / instances,
            "requests_per_unit": len(latencies) / max(1, units),
        }

    def abort_to_compensated(self, *, rounds: int) -> dict:
        times = []
        workers = self._workers(work_s=0, preemptive=False, last_to=None, compensations=True)
        for _, w in workers:
            w.start()
        try:
            for _ in range(rounds):
                instance = self.client.start_workflow(self.broker, "parked", "go")["id"]
                parked = self.client.get(self.broker, "PARKED", wait=60, correl_id=instance, mode="browse")
                if parked is None:
                    raise RuntimeError(f"instance {instance} did not reach its fifth step")
                started = time.perf_counter()
                self.client.abort_instance(instance, "benchmark")
                undone = self.client.get(self.broker, UNDONE, wait=60)
                if undone is None or undone.text != instance:
                    raise RuntimeError(f"instance {instance} was not compensated")
                times.append(time.perf_counter() - started)
                shown = self.client.display_instance(instance)
                if shown["state"] != "compensated":
                    raise RuntimeError(f"instance {instance} is {shown['state']}")
        finally:
            for client, w in workers:
                w.stop()
                client.close()
        return {
            "scenario": "abort to compensated, 4 committed steps",
            "rounds": rounds,
            "p50_ms": statistics.median(times) * 1000,
            "p99_ms": _percentile(times, 99) * 1000,
            "max_ms": max(times) * 1000,
        }


def _median_row(rows: list[dict]) -> dict:
    row = dict(rows[0])
    for key in (
        "instances_per_s",
        "step_p50_ms",
        "step_p99_ms",
        "server_cpu_ms_per_step",
        "workers_cpu_ms_per_step",
        "server_cpu_ms_per_start",
        "requests_per_unit",
    ):
        row[key] = statistics.median(r[key] for r in rows)
    row["rounds"] = len(rows)
    row["instances_per_s_rounds"] = [round(r["instances_per_s"], 1) for r in rows]
    return row


def run(
    *,
    base_url: str,
    token: str,
    broker: str,
    instances: int,
    rounds: int,
    repeat: int = 1,
    batch: int = 8,
    server_cpu: Callable[[], float] = lambda: 0.0,
    load: Callable[[], str] = lambda: "",
) -> dict:
    bench = Bench(base_url=base_url, token=token, broker=broker, server_cpu=server_cpu, batch=batch)
    try:
        bench.throughput(instances=max(5, instances // 10), work_ms=1, preemptive=False)  # warm up
        results = []
        loads = []
        for work_ms in (1, 5):
            runs: dict[bool, list[dict]] = {False: [], True: []}
            for r in range(repeat):
                for preemptive in (False, True) if r % 2 == 0 else (True, False):  # alternated
                    loads.append(load())
                    runs[preemptive].append(
                        bench.throughput(instances=instances, work_ms=work_ms, preemptive=preemptive)
                    )
            normal, pre = _median_row(runs[False]), _median_row(runs[True])
            pre["ratio_to_normal"] = pre["instances_per_s"] / normal["instances_per_s"]
            results += [normal, pre]
        return {
            "throughput": results,
            "compensation": bench.abort_to_compensated(rounds=rounds),
            "batch": batch,
            "loads": loads,
        }
    finally:
        bench.close()

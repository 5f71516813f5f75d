"""The scenarios of ``manage.py benchmark_workflows``: a four-step workflow served by step
workers of the Python client (``baton_client.StepWorker``, one per step, each with its own
session) through a server on the scratch database, at 1 ms and 5 ms of work per step, the
workers getting normally and pre-emptively (rounds alternated, medians reported):

- **closed loop** (what a caller meets): K callers (``--callers``, the batch size by
  default), each starting an instance and waiting for its end (the last step puts on the
  caller's own queue under its unit of work: the get that waits for it is woken when that
  commits), again and again until ``--instances`` have ended: instances per second and an
  instance's latency (its start to its end, p50/p99). Here a pre-emptive worker takes a
  request as soon as the worker upstream has reported it, before that one's unit of work
  commits, so the steps of an instance overlap.
- **saturated**: ``--instances`` instances started first, then the workers run until all
  have ended: instances per second. Every worker is always busy with a batch of its own,
  so pre-emptive gets add no capacity: the ratio is about 1 by construction.

For each: how many requests a worker's unit of work took, on average (``--batch`` at
most); each unit of work's latency (from the answer of the get that took it to the answer of
the call that committed it: held, answered; the commit then happens with its upstream's);
CPU seconds per step from /proc, the server's process and this one's (workers and callers).
Then the time from ``abort`` to ``compensated`` for an instance with four committed steps (a
fifth step that no worker serves keeps it running). No call polls: gets wait on wake-ups.

The setup (``define``) runs in the benchmark's child process on the scratch database; the
rest here, over HTTP, so it imports no model."""

from __future__ import annotations

import statistics
import threading
import time
from typing import Callable

STEPS = ["s1", "s2", "s3", "s4"]
DONE, UNDONE = "DONE", "UNDONE"
#: The most closed-loop callers: each has its queue, DONE.1 to DONE.64.
MAX_CALLERS = 64


def define(broker: str) -> None:
    """The benchmark's broker, queues and workflows (in the child, on the scratch database)."""
    from brokers.services.brokers import broker_define
    from brokers.services.queues import queue_define
    from workflows.services.definitions import workflow_define

    broker_define(name=broker, transaction_timeout_ms=120_000)
    for s in STEPS:
        queue_define(broker=broker, name=s.upper(), max_depth=1_000_000)
        queue_define(broker=broker, name=f"UNDO.{s.upper()}", max_depth=1_000_000)
    for q in (DONE, UNDONE, "PARKED", *(f"{DONE}.{n}" for n in range(1, MAX_CALLERS + 1))):
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
    def __init__(
        self,
        *,
        base_url: str,
        token: str,
        broker: str,
        server_cpu: Callable[[], float],
        batch: int,
        report_every: float | None = None,
    ) -> None:
        from baton_client import Client, StepWorker

        self.base_url, self.token, self.broker = base_url, token, broker
        self.server_cpu = server_cpu
        self.batch = batch
        #: The workers' ``report_every`` (None: the StepWorker's default).
        self.report_every = report_every
        self.Client = Client
        self.Worker = _timed_worker(StepWorker)
        self.client = Client(base_url, token, timeout=120)

    def close(self) -> None:
        self.client.close()

    def _workers(self, *, work_s: float, preemptive: bool, compensations: bool = False):
        """One worker per step (and per compensation), each with its own client (session).
        A request's body is the queue its instance's end is told on: the last step puts the
        instance's id there, under its unit of work (the parked workflow's never ends)."""
        from baton_client import Output

        workers = []

        def step_function(step: str, client):
            def serve(request):
                if work_s:
                    time.sleep(work_s)
                if step == STEPS[-1] and request.workflow == "bench":
                    client.put(self.broker, request.text, request.instance, transaction=request.transaction)
                return Output(output=request.body, compensation=b"undo")

            return serve

        def undo_function(step: str, client):
            def undo(request):
                if step == STEPS[0]:  # the last compensation: tell the measuring loop
                    client.put(self.broker, UNDONE, request.instance, transaction=request.transaction)

            return undo

        for s in STEPS:
            client = self.Client(self.base_url, self.token, timeout=120)
            options = {} if self.report_every is None else {"report_every": self.report_every}
            worker = self.Worker(
                client,
                broker=self.broker,
                workflow="bench",
                batch=self.batch,
                preemptive=preemptive,
                wait=1.0,
                **options,
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

    def _row(
        self,
        *,
        kind: str,
        work_ms: float,
        preemptive: bool,
        instances: int,
        elapsed: float,
        cpu: float,
        server: float,
        workers,
    ) -> dict:
        latencies = [x for _, w in workers for x in w.latencies]
        units = sum(w.units for _, w in workers)
        steps = instances * len(STEPS)
        return {
            "scenario": f"{kind}, {'pre-emptive' if preemptive else 'normal'} gets, {work_ms:g} ms of work per step",
            "kind": kind,
            "preemptive": preemptive,
            "work_ms": work_ms,
            "instances": instances,
            "instances_per_s": instances / elapsed,
            "unit_p50_ms": _percentile(latencies, 50) * 1000,
            "unit_p99_ms": _percentile(latencies, 99) * 1000,
            "server_cpu_ms_per_step": server * 1000 / steps,
            "client_cpu_ms_per_step": cpu * 1000 / steps,
            "requests_per_unit": len(latencies) / max(1, units),
        }

    def saturated(self, *, instances: int, work_ms: float, preemptive: bool) -> dict:
        """``instances`` started, then the workers run until every one has ended."""
        start_server0 = self.server_cpu()
        for _ in range(instances):
            self.client.start_workflow(self.broker, "bench", DONE)
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
        row = self._row(
            kind="saturated",
            work_ms=work_ms,
            preemptive=preemptive,
            instances=instances,
            elapsed=elapsed,
            cpu=cpu,
            server=server,
            workers=workers,
        )
        row["server_cpu_ms_per_start"] = start_server * 1000 / instances
        return row

    def closed_loop(self, *, instances: int, work_ms: float, preemptive: bool, callers: int) -> dict:
        """``callers`` threads, each with its own session, each starting an instance (its
        end told on its own queue) and waiting for that end, until ``instances`` have ended."""
        workers = self._workers(work_s=work_ms / 1000, preemptive=preemptive)
        for _, w in workers:
            w.start()
        clients = [self.Client(self.base_url, self.token, timeout=120).open() for _ in range(callers)]
        latencies: list[float] = []
        left = [instances]
        lock = threading.Lock()
        errors: list[BaseException] = []

        def caller(n: int, client) -> None:
            queue = f"{DONE}.{n + 1}"
            try:
                while True:
                    with lock:
                        if left[0] <= 0:
                            return
                        left[0] -= 1
                    began = time.perf_counter()
                    instance = client.start_workflow(self.broker, "bench", queue)["id"]
                    done = client.get(self.broker, queue, wait=60)
                    if done is None or done.text != instance:
                        raise RuntimeError(f"instance {instance} did not end within 60 s ({done!r})")
                    with lock:
                        latencies.append(time.perf_counter() - began)
            except BaseException as exc:  # reported below
                errors.append(exc)

        threads = [threading.Thread(target=caller, args=(n, c), daemon=True) for n, c in enumerate(clients)]
        cpu0, server0 = time.process_time(), self.server_cpu()
        started = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - started
        cpu, server = time.process_time() - cpu0, self.server_cpu() - server0
        for client in clients:
            client.close()
        for client, w in workers:
            w.stop()
            client.close()
        if errors:
            raise errors[0]
        row = self._row(
            kind="closed loop",
            work_ms=work_ms,
            preemptive=preemptive,
            instances=instances,
            elapsed=elapsed,
            cpu=cpu,
            server=server,
            workers=workers,
        )
        row["callers"] = callers
        row["instance_p50_ms"] = _percentile(latencies, 50) * 1000
        row["instance_p99_ms"] = _percentile(latencies, 99) * 1000
        return row

    def abort_to_compensated(self, *, rounds: int) -> dict:
        times = []
        workers = self._workers(work_s=0, preemptive=False, compensations=True)
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


_MEDIANS = (
    "instances_per_s",
    "unit_p50_ms",
    "unit_p99_ms",
    "server_cpu_ms_per_step",
    "client_cpu_ms_per_step",
    "server_cpu_ms_per_start",
    "requests_per_unit",
    "instance_p50_ms",
    "instance_p99_ms",
)


def _median_row(rows: list[dict]) -> dict:
    row = dict(rows[0])
    for key in _MEDIANS:
        if key in row:
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
    callers: int | None = None,
    report_every: float | None = None,
    only: str | None = None,
    server_cpu: Callable[[], float] = lambda: 0.0,
    load: Callable[[], str] = lambda: "",
) -> dict:
    callers = callers or batch
    if not 1 <= callers <= MAX_CALLERS:
        raise ValueError(f"callers: 1 to {MAX_CALLERS}, not {callers}.")
    bench = Bench(
        base_url=base_url, token=token, broker=broker, server_cpu=server_cpu, batch=batch, report_every=report_every
    )
    scenarios = {
        "closed_loop": lambda work_ms, preemptive: bench.closed_loop(
            instances=instances, work_ms=work_ms, preemptive=preemptive, callers=callers
        ),
        "saturated": lambda work_ms, preemptive: bench.saturated(
            instances=instances, work_ms=work_ms, preemptive=preemptive
        ),
    }
    try:
        warm = max(5, instances // 10)
        bench.saturated(instances=warm, work_ms=1, preemptive=False)
        bench.closed_loop(instances=warm, work_ms=1, preemptive=True, callers=callers)
        results: dict[str, list[dict]] = {name: [] for name in scenarios}
        loads = []
        for name, scenario in scenarios.items():
            if only and name != only:
                continue
            for work_ms in (1, 5):
                runs: dict[bool, list[dict]] = {False: [], True: []}
                for r in range(repeat):
                    for preemptive in (False, True) if r % 2 == 0 else (True, False):  # alternated
                        loads.append(load())
                        runs[preemptive].append(scenario(work_ms, preemptive))
                normal, pre = _median_row(runs[False]), _median_row(runs[True])
                pre["ratio_to_normal"] = pre["instances_per_s"] / normal["instances_per_s"]
                results[name] += [normal, pre]
        return {
            **results,
            "compensation": bench.abort_to_compensated(rounds=rounds) if rounds else None,
            "batch": batch,
            "callers": callers,
            "loads": loads,
        }
    finally:
        bench.close()

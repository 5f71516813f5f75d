"""The chain of :mod:`.pipelines` through the Python client over sessions
(``python manage.py benchmark_pipelines``, scenario ``chain-session``).

The same stages as the in-process chain (stage 0 puts N messages on S0 in one unit of
work, w of work before each put; stage i gets from S(i-1) as they come, works w per
message, puts it on S(i), commits with a wait), but each stage is an application thread
with its own :class:`baton_client.Client` session to a real server (Uvicorn, started by
the command on the scratch database). Puts under a unit of work are pipelined; gets and
commits wait for their replies. Runs in the command's own process, which never touches a
database: everything goes through the server.
"""

from __future__ import annotations

import threading
import time
from typing import Callable

from baton_client import Client
from baton_client.errors import BatonError

from .pipelines import (
    COMMIT_WAIT_S,
    GET_BATCH,
    GET_WAIT_S,
    RUN_TIMEOUT_S,
    UOW_TIMEOUT_MS,
    PipelineResult,
    _Run,
    _Stopped,
    alternated,
)
from .report import BenchmarkError

SCENARIO = "chain-session"
REQUEST_TIMEOUT_S = 60.0


class _SessionRun(_Run):
    """A run whose threads are applications with a client each (a session, or REST), and no
    database connection."""

    def __init__(
        self, label: str, *, base_url: str, token: str, timeout_s: float = RUN_TIMEOUT_S, transport: str = "session"
    ) -> None:
        super().__init__(label, timeout_s=timeout_s)
        self.base_url, self.token, self.transport = base_url, token, transport

    def add(self, name: str, work: Callable) -> threading.Thread:
        def main() -> None:
            client = Client(self.base_url, self.token, timeout=REQUEST_TIMEOUT_S, transport=self.transport)
            open_uows: list = []
            try:
                client.list_brokers()  # the HTTP connection, before the clock starts
                client.open()  # and the session's
                work(self, client, open_uows)
            except _Stopped:
                pass
            except BaseException as exc:  # noqa: BLE001 - the main thread reports it
                self.errors.append(exc)
                self.stop.set()
                if self.start_line is not None:
                    self.start_line.abort()
            finally:
                if self.stop.is_set():
                    for txn in open_uows:
                        try:
                            txn.rollback()
                        except BatonError:
                            pass  # best effort on the way out of a failed run
                client.close()

        return threading.Thread(target=main, name=f"{self.label}: {name}", daemon=True)


def _committed(run: _Run, *, who: str, txn) -> bool:
    outcome = txn.commit()
    held = not outcome.committed
    while not outcome.committed:
        run.check(who, f"its held commit (waiting on {', '.join(outcome.waiting_on) or 'nothing'})")
        outcome = txn.commit(wait=min(COMMIT_WAIT_S, max(run.remaining(), 0.001)))
    return held


def run_chain_session(
    *,
    base_url: str,
    token: str,
    prefix: str,
    stages: int,
    messages: int,
    work_ms: float,
    preemptive: bool,
    tag: str = "CHAINS",
    server_cpu: Callable[[], float] | None = None,
) -> PipelineResult:
    """The chain, each stage an application with a session of its own; ``server_cpu``: the
    server's CPU seconds so far, read as the run starts and once its threads are done."""
    label = f"chain over sessions, pre-emptive {'on' if preemptive else 'off'}"
    broker = f"{prefix}.{tag}.{'ON' if preemptive else 'OFF'}"
    with Client(base_url, token, timeout=REQUEST_TIMEOUT_S, transport="rest") as admin:
        admin.define_broker(
            broker,
            description="python manage.py benchmark_pipelines: chain over sessions",
            transaction_timeout_ms=UOW_TIMEOUT_MS,
        )
        for i in range(stages + 1):
            admin.define_queue(broker, f"S{i}", max_depth=999_999_999, default_persistence="persistent")
    work_s = work_ms / 1000
    run = _SessionRun(label, base_url=base_url, token=token)
    held: dict[int, bool] = {}

    def work_done() -> None:
        if work_s > 0:
            time.sleep(work_s)  # the work: waiting, like an I/O call

    def producer(run: _Run, client: Client, open_uows: list) -> None:
        run.started()
        txn = client.transaction(broker, timeout_ms=UOW_TIMEOUT_MS)
        open_uows.append(txn)
        for n in range(messages):
            work_done()
            txn.put("S0", f"message {n}", persistence="persistent")
        held[0] = _committed(run, who="stage 0", txn=txn)
        run.times["stage 0"] = time.perf_counter()

    def stage(i: int) -> Callable:
        def work(run: _Run, client: Client, open_uows: list) -> None:
            run.started()
            txn = client.transaction(broker, timeout_ms=UOW_TIMEOUT_MS)
            open_uows.append(txn)
            done = 0
            while done < messages:
                run.check(f"stage {i}", f"{messages - done} of {messages} messages on {broker}/S{i - 1}")
                got = txn.get(
                    f"S{i - 1}",
                    preemptive=preemptive,
                    batch=min(GET_BATCH, messages - done),
                    wait=max(0.001, min(GET_WAIT_S, run.remaining())),
                )
                for message in got:
                    work_done()
                    txn.put(f"S{i}", message.body + b" >", correl_id=message.msg_id, persistence="persistent")
                    done += 1
            held[i] = _committed(run, who=f"stage {i}", txn=txn)
            run.times[f"stage {i}"] = time.perf_counter()

        return work

    threads = [run.add("stage 0", producer)] + [run.add(f"stage {i}", stage(i)) for i in range(1, stages + 1)]
    run.start(threads)
    cpu_at_start = server_cpu() if server_cpu is not None else None
    run.join(threads)
    cpu_used = server_cpu() - cpu_at_start if server_cpu is not None and cpu_at_start is not None else None
    run.raise_error()
    start = run.times["start"]
    return PipelineResult(
        SCENARIO,
        preemptive,
        stages,
        messages,
        work_ms,
        run.times[f"stage {stages}"] - start,
        notes={
            "committed_at_s": {f"stage {i}": round(run.times[f"stage {i}"] - start, 4) for i in range(stages + 1)},
            "commits_held": sorted(i for i, h in held.items() if h),
            **({"server_cpu_s": round(cpu_used, 3)} if cpu_used is not None else {}),
        },
    )


def run_session_pipelines(
    *,
    base_url: str,
    token: str,
    prefix: str,
    stages: int,
    messages: int,
    work_ms: float,
    progress: bool = False,
    results: list[PipelineResult],
    server_cpu: Callable[[], float] | None = None,
    warm_up: bool = True,
    repeat: int = 1,
) -> None:
    """Warm up (tiny chains; not with ``warm_up=False``), then the chain over sessions with
    pre-emptive gets off, then on, ``repeat`` times (rounds alternated);
    ``server_cpu``: see :func:`run_chain_session`."""
    import sys

    def say(text: str) -> None:
        if progress:
            print(f"  {text}", file=sys.stderr, flush=True)

    if warm_up:
        say("chain over sessions: warming up")
    for preemptive in (False, True) if warm_up else ():
        run_chain_session(
            base_url=base_url,
            token=token,
            prefix=prefix,
            stages=1,
            messages=3,
            work_ms=0,
            preemptive=preemptive,
            tag="WARMS",
        )
    for n, preemptive in alternated(repeat):
        say(f"chain over sessions, pre-emptive gets {'on' if preemptive else 'off'}")
        try:
            result = run_chain_session(
                base_url=base_url,
                token=token,
                prefix=prefix,
                stages=stages,
                messages=messages,
                work_ms=work_ms,
                preemptive=preemptive,
                tag=f"CHAINS{n or ''}",
                server_cpu=server_cpu,
            )
        except BatonError as exc:
            raise BenchmarkError(f"chain over sessions: {exc!r}") from exc
        say(f"  {result.seconds:.3f} s")
        results.append(result)

"""Wake-up latency across processes (``python -m bench benchmark_wakeups``).

In a child process on a scratch database (``--phase run``), the committer defines a
broker and a queue and starts a waiter process (:mod:`.wakeup_waiter`). N times: the
waiter says it is about to get and makes a get that waits; the committer pauses a few
to a hundred milliseconds (so that the get is waiting), puts one message — an immediate put, one
database transaction that commits — and notes the moment the put returned. The waiter
notes the moment its get returned. Latency = get returned − put returned, on the
machine's monotonic clock (shared by all its processes). It includes the waiter's own
second get attempt (a database transaction that takes the message); "heard" is the part
until the waiter's wake-up listener heard the commit (the bus alone).
"""

from __future__ import annotations

import json
import random
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass

from .report import BenchmarkError, grid
from tests.support.scratch import base_dir

QUEUE = "LATENCY"
#: The waiter's get waits at most this long: a lost wake-up shows as a latency this long.
WAIT_S = 10.0
#: The committer's pause before each put, so that the get is waiting (random: a poll would have
#: backed off by a varying amount).
PAUSE_S = (0.005, 0.1)


@dataclass
class WakeupResult:
    scenario: str  # "sqlite" | "postgres" | "postgres+redis" | "sqlite poll"
    bus: str
    messages: int
    p50_ms: float
    p99_ms: float
    max_ms: float
    mean_ms: float
    heard_p50_ms: float | None
    heard_p99_ms: float | None
    timeouts: int

    def as_dict(self) -> dict:
        return {"kind": "result", **asdict(self)}


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * p // 100))
    return ordered[int(rank) - 1]


def summary(
    *, scenario: str, bus: str, latencies_ms: list[float], heard_ms: list[float], timeouts: int
) -> WakeupResult:
    return WakeupResult(
        heard_p50_ms=round(percentile(heard_ms, 50), 3) if heard_ms else None,
        heard_p99_ms=round(percentile(heard_ms, 99), 3) if heard_ms else None,
        scenario=scenario,
        bus=bus,
        messages=len(latencies_ms),
        p50_ms=round(percentile(latencies_ms, 50), 3),
        p99_ms=round(percentile(latencies_ms, 99), 3),
        max_ms=round(max(latencies_ms), 3),
        mean_ms=round(statistics.fmean(latencies_ms), 3),
        timeouts=timeouts,
    )


def table(results: list[WakeupResult]) -> str:
    header = (
        "scenario",
        "wake-up bus",
        "messages",
        "p50 ms",
        "p99 ms",
        "max ms",
        "mean ms",
        "heard p50",
        "heard p99",
        "timeouts",
    )

    def ms(value: float | None) -> str:
        return "-" if value is None else f"{value:.2f}"

    return grid(
        [header]
        + [
            (
                r.scenario,
                r.bus,
                str(r.messages),
                ms(r.p50_ms),
                ms(r.p99_ms),
                ms(r.max_ms),
                ms(r.mean_ms),
                ms(r.heard_p50_ms),
                ms(r.heard_p99_ms),
                str(r.timeouts),
            )
            for r in results
        ]
    )


def _line(proc: subprocess.Popen) -> str:
    text = proc.stdout.readline()
    if not text:
        proc.wait(30)
        raise BenchmarkError(f"the waiter process exited ({proc.returncode}): {proc.stderr.read()[-2000:]}")
    return text.strip()


def wakeup_latencies(*, broker: str, messages: int, env: dict[str, str]) -> dict:
    """Run in the committer process (on the scratch database): the bus the waiter used, the
    latencies and the heard latencies in milliseconds, and how many gets timed out."""
    from brokers.services.brokers import broker_define
    from brokers.services.message_input import MessageInput
    from brokers.services.messages import message_put
    from brokers.services.queues import queue_define

    broker_define(name=broker)
    queue_define(broker=broker, name=QUEUE)
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.support.wakeup_waiter", broker, QUEUE, str(messages), str(WAIT_S)],
        cwd=base_dir(),
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    latencies: list[float] = []
    heard: list[float] = []
    timeouts = 0
    rng = random.Random(17)
    try:
        _, bus, listening = _line(proc).split()
        if bus != "poll" and listening != "yes":
            raise BenchmarkError(f"the waiter's wake-up bus ({bus}) is not listening")
        for n in range(messages):
            if _line(proc) != f"ready {n}":
                raise BenchmarkError(f"the waiter is out of step at message {n}")
            time.sleep(rng.uniform(*PAUSE_S))  # let its get start waiting (a benchmark's pacing)
            message_put(broker=broker, queue=QUEUE, messages=[MessageInput(body=str(n).encode())])
            put_returned = time.monotonic_ns()
            answer = json.loads(_line(proc))
            if answer["body"] is None:
                timeouts += 1
                continue
            latencies.append((answer["returned_ns"] - put_returned) / 1e6)
            if answer["heard_ns"]:
                heard.append((answer["heard_ns"] - put_returned) / 1e6)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    if not latencies:
        raise BenchmarkError("every get timed out")
    return {"bus": bus, "latencies_ms": latencies, "heard_ms": heard, "timeouts": timeouts}

"""The request-reply of :mod:`.pipelines` through the API (``python manage.py
benchmark_pipelines``, scenarios ``request-reply-session`` and ``request-reply-rest``).

The same applications as the in-process request-reply (App1 on A puts N requests in one
unit of work; App2 on B gets them as they come, works w on each, puts a reply; App1' on A
gets the N replies and commits with a wait), but each is an application thread with its
own :class:`baton_client.Client` — over a session, or over REST — to a real server
(Uvicorn on the scratch database). The brokers, queues and the two channels are defined
and started through REST; each channel's agent runs in a process of its own (``manage.py
channel_run``, as a worker would run it), started by the command before the clock starts.
"""

from __future__ import annotations

import time
from contextlib import AbstractContextManager
from typing import Callable

import httpx
from baton_client import Client
from baton_client.errors import BatonError

from .pipelines import (
    CHANNEL_BATCH_INTERVAL_MS,
    CHANNEL_BATCH_SIZE,
    CHANNEL_WINDOW,
    GET_BATCH,
    GET_WAIT_S,
    UOW_TIMEOUT_MS,
    PipelineResult,
    _Run,
    alternated,
)
from .pipelines_session import REQUEST_TIMEOUT_S, _committed, _SessionRun
from .report import BenchmarkError

#: Scenario name -> the client's transport.
SCENARIOS = {"request-reply-session": "session", "request-reply-rest": "rest"}
#: How long the channels' agents may take to start (a Django process each): a bound for a
#: start that never comes, not a figure; under the test suite's two passes at once a
#: Django process has taken over a minute to start.
AGENTS_START_S = 180.0

#: Starts the agents of these channels for the length of a ``with`` block.
Agents = Callable[[list[str]], AbstractContextManager]


def _define(
    admin: Client,
    http: httpx.Client,
    *,
    a: str,
    b: str,
    channels: tuple[str, str],
    preemptive: bool,
    batch_interval_ms: int,
    window: int,
) -> None:
    for name in (a, b):
        admin.define_broker(
            name,
            description="python manage.py benchmark_pipelines: request-reply",
            transaction_timeout_ms=UOW_TIMEOUT_MS,
        )
    local = {"max_depth": 999_999_999, "default_persistence": "persistent"}
    admin.define_queue(a, b, usage="transmission", **local)
    admin.define_queue(a, "REQ", kind="remote", remote_broker=b, remote_queue="REQ.IN", transmission_queue=b)
    admin.define_queue(a, "REPLY.IN", **local)
    admin.define_queue(b, "REQ.IN", **local)
    admin.define_queue(b, a, usage="transmission", **local)
    admin.define_queue(b, "REPLY", kind="remote", remote_broker=a, remote_queue="REPLY.IN", transmission_queue=a)
    for name, source, target in ((channels[0], a, b), (channels[1], b, a)):
        _ok(
            http.post(
                "/api/channels/",
                json={
                    "name": name,
                    "source_broker": source,
                    "transmission_queue": target,
                    "target_broker": target,
                    "batch_size": CHANNEL_BATCH_SIZE,
                    "batch_interval_ms": batch_interval_ms,
                    "window": window,
                    "preemptive": preemptive,
                },
            )
        )
        _ok(http.post(f"/api/channels/{name}/start/"))


def _ok(response: httpx.Response) -> dict:
    if response.status_code >= 400:
        raise BenchmarkError(
            f"{response.request.method} {response.request.url.path}: HTTP {response.status_code} {response.text[:500]}"
        )
    return response.json() if response.content else {}


def _agents_running(http: httpx.Client, channels: tuple[str, ...], label: str) -> None:
    """Wait (bounded) until each channel's agent holds its lease."""
    end = time.monotonic() + AGENTS_START_S
    while True:
        states = [_ok(http.get(f"/api/channels/{name}/")) for name in channels]
        if all(s["state"] == "running" and s["agent"] for s in states):
            return
        if time.monotonic() > end:
            raise BenchmarkError(f"{label}: the channel agents did not start within {AGENTS_START_S:g} s: {states}")
        time.sleep(0.05)  # polling interval of a bounded wait for other processes


def run_request_reply_client(
    *,
    base_url: str,
    token: str,
    scenario: str,
    prefix: str,
    messages: int,
    work_ms: float,
    preemptive: bool,
    agents: Agents,
    tag: str = "RRC",
    batch_interval_ms: int = CHANNEL_BATCH_INTERVAL_MS,
    window: int = CHANNEL_WINDOW,
) -> PipelineResult:
    transport = SCENARIOS[scenario]
    label = f"request-reply over {transport}, pre-emptive {'on' if preemptive else 'off'}"
    base = f"{prefix}.{tag}{transport[0].upper()}.{'ON' if preemptive else 'OFF'}"
    a, b = f"{base}.A", f"{base}.B"
    channels = (f"{base}.A.TO.B", f"{base}.B.TO.A")
    headers = {"Authorization": f"Token {token}"}
    with (
        Client(base_url, token, timeout=REQUEST_TIMEOUT_S, transport="rest") as admin,
        httpx.Client(base_url=base_url, headers=headers, timeout=REQUEST_TIMEOUT_S) as http,
    ):
        _define(
            admin,
            http,
            a=a,
            b=b,
            channels=channels,
            preemptive=preemptive,
            batch_interval_ms=batch_interval_ms,
            window=window,
        )
        with agents(list(channels)):
            try:
                _agents_running(http, channels, label)
                result = _run(
                    base_url=base_url,
                    token=token,
                    transport=transport,
                    label=label,
                    a=a,
                    b=b,
                    messages=messages,
                    work_ms=work_ms,
                    preemptive=preemptive,
                )
            finally:
                for name in channels:
                    _ok(http.post(f"/api/channels/{name}/stop/"))
        batches = [_ok(http.get(f"/api/channels/{name}/"))["batches_committed"] for name in channels]
    result.notes["channel_batches"] = {"A.TO.B": batches[0], "B.TO.A": batches[1]}
    return result


def _run(
    *,
    base_url: str,
    token: str,
    transport: str,
    label: str,
    a: str,
    b: str,
    messages: int,
    work_ms: float,
    preemptive: bool,
) -> PipelineResult:
    work_s = work_ms / 1000
    run = _SessionRun(label, base_url=base_url, token=token, transport=transport)
    requests: list = []
    replies: list[str] = []
    held: dict[str, bool] = {}

    def work_done() -> None:
        if work_s > 0:
            time.sleep(work_s)  # the work: waiting, like an I/O call

    def take(run: _Run, txn, *, who: str, queue: str, each: Callable) -> None:
        done = 0
        while done < messages:
            run.check(who, f"{messages - done} of {messages} messages on {queue}")
            for message in txn.get(
                queue,
                preemptive=preemptive,
                batch=min(GET_BATCH, messages - done),
                wait=max(0.001, min(GET_WAIT_S, run.remaining())),
            ):
                run.times.setdefault(f"{who} got the first", time.perf_counter())
                each(message)
                done += 1
        run.times[f"{who} got the last"] = time.perf_counter()

    def app1(run: _Run, client: Client, open_uows: list) -> None:
        run.started()
        txn = client.transaction(a, timeout_ms=UOW_TIMEOUT_MS)
        open_uows.append(txn)
        for n in range(messages):
            work_done()
            requests.append(txn.put("REQ", f"request {n}", persistence="persistent"))
        held["App1"] = _committed(run, who="App1", txn=txn)
        run.times["App1"] = time.perf_counter()

    def app2(run: _Run, client: Client, open_uows: list) -> None:
        run.started()
        txn = client.transaction(b, timeout_ms=UOW_TIMEOUT_MS)
        open_uows.append(txn)

        def each(message) -> None:
            work_done()
            txn.put("REPLY", b"reply to " + message.body, correl_id=message.msg_id, persistence="persistent")

        take(run, txn, who="App2", queue="REQ.IN", each=each)
        # App2 need not wait: a held commit completes by itself when its upstream commits.
        held["App2"] = not txn.commit().committed
        run.times["App2 asked to commit"] = time.perf_counter()

    def app1_replies(run: _Run, client: Client, open_uows: list) -> None:
        run.started()
        txn = client.transaction(a, timeout_ms=UOW_TIMEOUT_MS)
        open_uows.append(txn)
        take(run, txn, who="App1'", queue="REPLY.IN", each=lambda message: replies.append(message.correl_id))
        held["App1'"] = _committed(run, who="App1'", txn=txn)
        run.times["App1'"] = time.perf_counter()

    apps = [run.add("App1", app1), run.add("App2", app2), run.add("App1'", app1_replies)]
    run.start(apps)
    run.join(apps)
    run.raise_error()
    if sorted(replies) != sorted(put.msg_id for put in requests):
        raise BenchmarkError(f"{label}: the {len(replies)} replies do not answer the {len(requests)} requests.")
    start = run.times["start"]
    return PipelineResult(
        next(s for s, t in SCENARIOS.items() if t == transport),
        preemptive,
        None,
        messages,
        work_ms,
        run.times["App1'"] - start,
        notes={
            # when each unit of work committed, and when the requests and the replies arrived, in time order
            "committed_at_s": {
                name: round(t - start, 4)
                for name, t in sorted(run.times.items(), key=lambda i: i[1])
                if name != "start"
            },
            "commits_held": sorted(name for name, h in held.items() if h),
        },
    )


def run_request_reply_pipelines(
    *,
    base_url: str,
    token: str,
    prefix: str,
    messages: int,
    work_ms: float,
    agents: Agents,
    scenarios: list[str],
    progress: bool = False,
    results: list[PipelineResult],
    batch_interval_ms: int = CHANNEL_BATCH_INTERVAL_MS,
    window: int = CHANNEL_WINDOW,
    warm_up: bool = True,
    repeat: int = 1,
) -> None:
    """For each scenario asked for: warm up (a tiny run each way; not with
    ``warm_up=False``), then pre-emptive gets off, then on, ``repeat`` times (rounds
    alternated)."""
    import sys

    def say(text: str) -> None:
        if progress:
            print(f"  {text}", file=sys.stderr, flush=True)

    for scenario in scenarios:
        if warm_up:
            say(f"{scenario}: warming up")
        for preemptive in (False, True) if warm_up else ():
            run_request_reply_client(
                base_url=base_url,
                token=token,
                scenario=scenario,
                prefix=prefix,
                messages=3,
                work_ms=0,
                preemptive=preemptive,
                agents=agents,
                tag="WRRC",
                batch_interval_ms=batch_interval_ms,
                window=window,
            )
        for n, preemptive in alternated(repeat):
            say(f"{scenario}, pre-emptive gets {'on' if preemptive else 'off'}")
            try:
                result = run_request_reply_client(
                    base_url=base_url,
                    token=token,
                    scenario=scenario,
                    prefix=prefix,
                    messages=messages,
                    work_ms=work_ms,
                    preemptive=preemptive,
                    agents=agents,
                    tag=f"RRC{n or ''}",
                    batch_interval_ms=batch_interval_ms,
                    window=window,
                )
            except BatonError as exc:
                raise BenchmarkError(f"{scenario}: {exc!r}") from exc
            say(f"  {result.seconds:.3f} s")
            results.append(result)

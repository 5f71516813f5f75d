"""End-to-end times of pipelines of units of work, pre-emptive gets off and on
(``python manage.py benchmark_pipelines``).

Two scenarios, each run once with pre-emptive gets off and once with them on:

* **chain** — stage 0 (the producer) is one unit of work that, for each of N messages,
  works ``w`` and puts it on queue S0, then commits. Stage i (1..k) is a thread with one
  unit of work that gets from S(i-1) as messages come (a small batch and a wait), works
  ``w`` per message, puts each result on S(i), then commits with a wait. Without
  pre-emptive gets a stage sees nothing until its upstream has committed, so the stages
  run one after another (about (k+1)×N×w); with them the stages overlap, each stage's
  commit being held until its upstream commits.
* **request-reply** (two brokers and a channel each way) — broker A's remote queue REQ leads to
  broker B's REQ.IN over channel A.TO.B; B's remote queue REPLY leads to A's REPLY.IN over
  channel B.TO.A (in-process transport, batch size 100, pre-emptive like the
  applications). App1 on A puts N requests in one unit of work; App2 on B gets them as
  they come, works ``w`` on each and puts a reply (correl_id = the request's msg_id) in
  one unit of work; App1' on A gets the N replies in one unit of work and commits with
  a wait. Each channel's sender agent runs in a thread of its own.

The work is ``time.sleep(w)``: waiting, like an I/O call. Everything runs in threads of
one child process on the scratch database (see :mod:`.scratch`), each thread with its
own database connection, closed when it ends. Every wait is bounded: a message that
never arrives is a :class:`.report.BenchmarkError` naming who waited for what, never a
hang. Nothing here asserts anything about timings.
"""

from __future__ import annotations

import re
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from django.db import connections

from transactions.manager import transaction_begin, transaction_commit, transaction_rollback
from transactions.models import OPEN_STATES, Transaction, TransactionState

from brokers.models import Broker, Channel, ChannelReceipt, Persistence
from brokers.services.brokers import broker_define
from brokers.channels.definitions import channel_define, channel_start, channel_stop
from brokers.channels.sender import channel_agent_run
from brokers.services.message_input import MessageInput
from brokers.services.messages import message_get, message_put
from brokers.services.queues import queue_define
from .inprocess import MAX_DEPTH, scratch_cleanup
from .report import BenchmarkError, grid

#: The scenarios run in the child process on the scratch database; those run in the
#: command's own process through the API of a server (:mod:`.pipelines_session`,
#: :mod:`.pipelines_request_reply`); all of them.
IN_PROCESS = ("chain", "request-reply")
THROUGH_SERVER = ("chain-session", "request-reply-session", "request-reply-rest")
SCENARIOS = IN_PROCESS + THROUGH_SERVER

#: How long one run (one scenario, one setting) may take before it is an error.
RUN_TIMEOUT_S = 120.0
#: A consumer's get: at most this many messages a call, waiting at most this long a call
#: (then it looks at the clock and at the other threads, and waits again).
GET_BATCH = 10
GET_WAIT_S = 0.5
#: A held commit is waited for in slices of this long.
COMMIT_WAIT_S = 0.5
#: The channels of the request-reply scenario.
CHANNEL_BATCH_SIZE = 100
CHANNEL_BATCH_INTERVAL_MS = Channel._meta.get_field("batch_interval_ms").default
CHANNEL_WINDOW = Channel._meta.get_field("window").default
#: Units of work must outlive a run that times out (so that the error is ours, not a
#: timeout rollback's).
UOW_TIMEOUT_MS = int((RUN_TIMEOUT_S + 60) * 1000)
#: Stopping a channel's agent: it notices within its idle wait (1 s).
AGENT_STOP_S = 30.0
#: A thread still running this long after the deadline is stuck (e.g. in the database).
JOIN_GRACE_S = 40.0


@dataclass
class PipelineResult:
    scenario: str  # one of SCENARIOS
    preemptive: bool
    stages: int | None  # chain only
    messages: int
    work_ms: float
    seconds: float
    #: what else is worth knowing about the run (channel batches, held commits)
    notes: dict = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return self.messages / self.seconds if self.seconds > 0 else 0.0

    def as_dict(self) -> dict:
        return asdict(self)


# --- threads --------------------------------------------------------------------------------


class _Run:
    """The threads of one run: they open their database connections, wait at a start line,
    share a deadline and a stop flag, and report their errors. Each thread closes its
    connections when it ends, and rolls back a unit of work it leaves open after a failure."""

    def __init__(self, label: str, *, timeout_s: float = RUN_TIMEOUT_S) -> None:
        self.label = label
        self.timeout_s = timeout_s
        self.stop = threading.Event()
        self.errors: list[BaseException] = []
        self.start_line: threading.Barrier | None = None
        self.deadline = time.monotonic() + timeout_s + 60  # set again when the start line is crossed
        self.times: dict[str, float] = {}

    # called by the workers

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def check(self, who: str, waiting_for: str) -> None:
        """Raise if the run is out of time (every thread still waiting says what for), or if
        another thread failed."""
        if self.remaining() <= 0:
            raise BenchmarkError(f"{self.label}: {who} still waiting for {waiting_for} after {self.timeout_s:g} s.")
        if self.stop.is_set():
            raise _Stopped

    def started(self) -> float:
        """Cross the start line (every worker does, after opening its connection); returns
        the moment the run started."""
        assert self.start_line is not None
        try:
            self.start_line.wait(timeout=60)
        except threading.BrokenBarrierError:
            raise _Stopped from None
        return self.times["start"]

    # called by the main thread

    def add(self, name: str, work: Callable[[_Run, list[str]], None]) -> threading.Thread:
        """A thread (not started) running ``work(run, open_uows)``; ``open_uows`` is where
        it notes the units of work it begins, so that they are rolled back if the run fails."""

        def main() -> None:
            open_uows: list[str] = []
            try:
                Broker.objects.exists()  # open this thread's connection before the clock starts
                work(self, open_uows)
            except _Stopped:
                pass
            except BaseException as exc:  # noqa: BLE001 - the main thread reports it
                self.errors.append(exc)
                self.stop.set()
                if self.start_line is not None:
                    self.start_line.abort()
            finally:
                try:
                    if self.stop.is_set():
                        for txn in open_uows:
                            _rolled_back(txn)
                finally:
                    connections.close_all()  # this thread's connections

        return threading.Thread(target=main, name=f"{self.label}: {name}", daemon=True)

    def start(self, threads: list[threading.Thread]) -> None:
        """Start these threads, which all call :meth:`started`; the clock starts when the
        last of them (and this one) crosses the start line."""

        def crossed() -> None:
            self.times["start"] = time.perf_counter()
            self.deadline = time.monotonic() + self.timeout_s

        self.start_line = threading.Barrier(len(threads) + 1, action=crossed)
        for thread in threads:
            thread.start()
        try:
            self.start_line.wait(timeout=60)
        except threading.BrokenBarrierError:
            self.stop.set()
            if not self.errors:
                self.errors.append(BenchmarkError(f"{self.label}: the threads did not reach the start line."))

    def join(self, threads: list[threading.Thread]) -> None:
        """Wait for the threads: they end by themselves, at the latest (with an error) soon
        after the deadline; one still running well after it is an error."""
        for thread in threads:
            while thread.is_alive() and self.remaining() > -JOIN_GRACE_S:
                thread.join(0.2)
            if thread.is_alive():
                self.stop.set()
                self.errors.append(BenchmarkError(f"{self.label}: {thread.name} did not finish."))

    def raise_error(self) -> None:
        """Raise the run's errors (threads that time out together all report)."""
        if self.errors:
            first = self.errors[0]
            text = [
                str(e) if isinstance(e, BenchmarkError) else f"{self.label}: {type(e).__name__}: {e}"
                for e in self.errors
            ]
            raise BenchmarkError("\n".join(dict.fromkeys(text))) from first


class _Stopped(Exception):
    """Another thread of the run failed: stop quietly (it reports the error)."""


def _rolled_back(transaction_id: str) -> None:
    try:
        if Transaction.objects.filter(pk=transaction_id, state__in=OPEN_STATES).exists():
            transaction_rollback(transaction_id=transaction_id, reason="benchmark failed", require_open=False)
    except Exception:  # noqa: BLE001 - best effort on the way out of a failed run
        pass


# --- what the applications do ---------------------------------------------------------------


def _begin(broker: str, open_uows: list[str]) -> str:
    txn = transaction_begin(broker=broker, timeout_ms=UOW_TIMEOUT_MS).id
    open_uows.append(txn)
    return txn


def _put(*, broker: str, queue: str, txn: str, body: bytes, correl_id: str | None = None) -> str:
    put = message_put(
        broker=broker,
        queue=queue,
        transaction_id=txn,
        messages=[
            MessageInput(body=body, correl_id=correl_id, persistence=Persistence.PERSISTENT),
        ],
    )
    return put.messages[0].msg_id


def _take(
    run: _Run, *, who: str, broker: str, queue: str, txn: str, count: int, preemptive: bool, each: Callable
) -> None:
    """Get ``count`` messages from the queue under ``txn`` as they come (pre-emptively or
    not), calling ``each(message)`` for every one."""
    done = 0
    while done < count:
        run.check(who, f"{count - done} of {count} messages on {broker}/{queue}")
        got = message_get(
            broker=broker,
            queue=queue,
            transaction_id=txn,
            preemptive=preemptive,
            batch=min(GET_BATCH, count - done),
            wait=max(0.001, min(GET_WAIT_S, run.remaining())),
        )
        for message in got.messages:
            each(message)
            done += 1


def _committed(run: _Run, *, who: str, txn: str, wait: bool = True) -> bool:
    """Commit ``txn``; with ``wait``, until it has committed (a held commit is waited for).
    Returns whether the commit was held at first."""
    outcome = transaction_commit(transaction_id=txn)
    held = outcome.state != TransactionState.COMMITTED
    while wait and outcome.state != TransactionState.COMMITTED:
        run.check(who, f"its held commit (waiting on {', '.join(outcome.waiting_on) or 'nothing'})")
        outcome = transaction_commit(transaction_id=txn, wait=min(COMMIT_WAIT_S, max(run.remaining(), 0.001)))
    return held


def _work(work_s: float) -> None:
    if work_s > 0:
        time.sleep(work_s)


def _setting(preemptive: bool) -> str:
    return "ON" if preemptive else "OFF"


# --- the chain ------------------------------------------------------------------------------


def run_chain(
    *, prefix: str, stages: int, messages: int, work_ms: float, preemptive: bool, tag: str = "CHAIN"
) -> PipelineResult:
    """Stage 0 puts N messages on S0 (w of work each) in one unit of work; stage i gets them
    from S(i-1) as they come, works w on each, puts it on S(i), commits with a wait."""
    label = f"chain, pre-emptive {'on' if preemptive else 'off'}"
    broker = f"{prefix}.{tag}.{_setting(preemptive)}"
    broker_define(
        name=broker, description="python manage.py benchmark_pipelines: chain", transaction_timeout_ms=UOW_TIMEOUT_MS
    )
    for i in range(stages + 1):
        queue_define(broker=broker, name=f"S{i}", max_depth=MAX_DEPTH, default_persistence=Persistence.PERSISTENT)
    work_s = work_ms / 1000
    run = _Run(label)
    held: dict[int, bool] = {}

    def producer(run: _Run, open_uows: list[str]) -> None:
        run.started()
        txn = _begin(broker, open_uows)
        for n in range(messages):
            _work(work_s)
            _put(broker=broker, queue="S0", txn=txn, body=f"message {n}".encode())
        held[0] = _committed(run, who="stage 0", txn=txn)
        run.times["stage 0"] = time.perf_counter()

    def stage(i: int) -> Callable[[_Run, list[str]], None]:
        def work(run: _Run, open_uows: list[str]) -> None:
            run.started()
            txn = _begin(broker, open_uows)

            def each(message) -> None:
                _work(work_s)
                _put(broker=broker, queue=f"S{i}", txn=txn, body=bytes(message.body) + b" >", correl_id=message.msg_id)

            _take(
                run,
                who=f"stage {i}",
                broker=broker,
                queue=f"S{i - 1}",
                txn=txn,
                count=messages,
                preemptive=preemptive,
                each=each,
            )
            held[i] = _committed(run, who=f"stage {i}", txn=txn)
            run.times[f"stage {i}"] = time.perf_counter()

        return work

    threads = [run.add("stage 0", producer)] + [run.add(f"stage {i}", stage(i)) for i in range(1, stages + 1)]
    run.start(threads)
    run.join(threads)
    run.raise_error()
    start = run.times["start"]
    last = run.times[f"stage {stages}"]
    return PipelineResult(
        "chain",
        preemptive,
        stages,
        messages,
        work_ms,
        last - start,
        notes={
            # in stage order (with pre-emptive gets several stages commit in one database transaction)
            "committed_at_s": {f"stage {i}": round(run.times[f"stage {i}"] - start, 4) for i in range(stages + 1)},
            "commits_held": sorted(i for i, h in held.items() if h),
        },
    )


# --- request-reply across two brokers -------------------------------------------------------


def _request_reply_define(
    *, a: str, b: str, channels: tuple[str, str], preemptive: bool, batch_interval_ms: int, window: int
) -> None:
    for name in (a, b):
        broker_define(
            name=name,
            description="python manage.py benchmark_pipelines: request-reply",
            transaction_timeout_ms=UOW_TIMEOUT_MS,
        )
    local = {"max_depth": MAX_DEPTH, "default_persistence": Persistence.PERSISTENT}
    # A: REQ → B/REQ.IN through the transmission queue named after B; replies land on REPLY.IN
    queue_define(broker=a, name=b, usage="transmission", **local)
    queue_define(broker=a, name="REQ", kind="remote", remote_broker=b, remote_queue="REQ.IN", transmission_queue=b)
    # the long unit of work's message (--long-uow-ms) shares the channel, not the applications' queues
    queue_define(broker=a, name="SIDE", kind="remote", remote_broker=b, remote_queue="SIDE.IN", transmission_queue=b)
    queue_define(broker=b, name="SIDE.IN", **local)
    queue_define(broker=a, name="REPLY.IN", **local)
    # B: requests land on REQ.IN; REPLY → A/REPLY.IN through the transmission queue named after A
    queue_define(broker=b, name="REQ.IN", **local)
    queue_define(broker=b, name=a, usage="transmission", **local)
    queue_define(broker=b, name="REPLY", kind="remote", remote_broker=a, remote_queue="REPLY.IN", transmission_queue=a)
    for name, source, target in ((channels[0], a, b), (channels[1], b, a)):
        channel_define(
            name=name,
            source_broker=source,
            transmission_queue=target,
            target_broker=target,
            batch_size=CHANNEL_BATCH_SIZE,
            batch_interval_ms=batch_interval_ms,
            window=window,
            preemptive=preemptive,
        )
        channel_start(name=name, dispatch=False)


def run_request_reply(
    *,
    prefix: str,
    messages: int,
    work_ms: float,
    preemptive: bool,
    tag: str = "RR",
    batch_interval_ms: int = CHANNEL_BATCH_INTERVAL_MS,
    window: int = CHANNEL_WINDOW,
    long_uow_ms: float = 0,
) -> PipelineResult:
    """The request-reply scenario. ``long_uow_ms`` > 0: at the start another application on
    A puts one message through the same channel A.TO.B (to B/SIDE.IN, which nobody reads) in
    a unit of work it commits only after that long, so that with pre-emptive gets the
    channel's oldest batch is held on it while the requests' batches behind it are ready."""
    label = f"request-reply, pre-emptive {'on' if preemptive else 'off'}"
    base = f"{prefix}.{tag}.{_setting(preemptive)}"
    a, b = f"{base}.A", f"{base}.B"
    channels = (f"{base}.A.TO.B", f"{base}.B.TO.A")
    _request_reply_define(
        a=a, b=b, channels=channels, preemptive=preemptive, batch_interval_ms=batch_interval_ms, window=window
    )
    work_s = work_ms / 1000
    run = _Run(label)
    requests: list[str] = []
    replies: list[str] = []
    held: dict[str, bool] = {}
    agents_stopping = threading.Event()

    def agent(name: str) -> Callable[[_Run, list[str]], None]:
        def work(run: _Run, open_uows: list[str]) -> None:
            outcome = channel_agent_run(
                name=name, holder=f"benchmark_pipelines:{name}", max_seconds=RUN_TIMEOUT_S + 120
            )
            if not agents_stopping.is_set():
                last_error = Channel.objects.filter(name=name).values_list("last_error", flat=True).first()
                raise BenchmarkError(
                    f"{label}: channel {name}'s agent ended ({outcome}) before it was stopped"
                    + (f": {last_error}" if last_error else ".")
                )

        return work

    def app1(run: _Run, open_uows: list[str]) -> None:
        run.started()
        txn = _begin(a, open_uows)
        for n in range(messages):
            _work(work_s)
            requests.append(_put(broker=a, queue="REQ", txn=txn, body=f"request {n}".encode()))
        held["App1"] = _committed(run, who="App1", txn=txn)
        run.times["App1"] = time.perf_counter()

    def app2(run: _Run, open_uows: list[str]) -> None:
        run.started()
        txn = _begin(b, open_uows)

        def each(message) -> None:
            _work(work_s)
            _put(broker=b, queue="REPLY", txn=txn, body=b"reply to " + bytes(message.body), correl_id=message.msg_id)

        _take(run, who="App2", broker=b, queue="REQ.IN", txn=txn, count=messages, preemptive=preemptive, each=each)
        # App2 need not wait: a held commit completes by itself when its upstream commits.
        held["App2"] = _committed(run, who="App2", txn=txn, wait=False)
        run.times["App2 asked to commit"] = time.perf_counter()

    def app1_replies(run: _Run, open_uows: list[str]) -> None:
        run.started()
        txn = _begin(a, open_uows)
        _take(
            run,
            who="App1'",
            broker=a,
            queue="REPLY.IN",
            txn=txn,
            count=messages,
            preemptive=preemptive,
            each=lambda message: replies.append(message.correl_id),
        )
        held["App1'"] = _committed(run, who="App1'", txn=txn)
        run.times["App1'"] = time.perf_counter()

    def long_uow(run: _Run, open_uows: list[str]) -> None:
        run.started()
        txn = _begin(a, open_uows)
        _put(broker=a, queue="SIDE", txn=txn, body=b"held by a long unit of work")
        until = time.monotonic() + long_uow_ms / 1000
        while (left := until - time.monotonic()) > 0:  # the workload: a unit of work open this long
            run.check("the long unit of work", "its end")
            time.sleep(min(left, 0.05))
        _committed(run, who="Long", txn=txn)
        run.times["Long"] = time.perf_counter()

    agents = [run.add(f"agent {name}", agent(name)) for name in channels]
    for thread in agents:
        thread.start()
    try:
        _agents_running(run, channels)
        apps = [run.add("App1", app1), run.add("App2", app2), run.add("App1'", app1_replies)]
        if long_uow_ms > 0:
            apps.append(run.add("Long", long_uow))
        run.start(apps)
        run.join(apps)
    finally:
        agents_stopping.set()
        for name in channels:
            channel_stop(name=name)
        stop_by = time.monotonic() + AGENT_STOP_S
        for thread in agents:
            thread.join(max(0.0, stop_by - time.monotonic()))
            if thread.is_alive():
                run.errors.append(BenchmarkError(f"{thread.name} did not stop within {AGENT_STOP_S:g} s."))
    run.raise_error()
    if sorted(replies) != sorted(requests):
        raise BenchmarkError(f"{label}: the {len(replies)} replies do not answer the {len(requests)} requests.")
    start = run.times["start"]
    batches = {
        name: Channel.objects.filter(name=name).values_list("batches_committed", flat=True).first() for name in channels
    }
    return PipelineResult(
        "request-reply",
        preemptive,
        None,
        messages,
        work_ms,
        run.times["App1'"] - start,
        notes={
            "committed_at_s": {name: round(t - start, 4) for name, t in run.times.items() if name != "start"},
            "commits_held": sorted(name for name, h in held.items() if h),
            "channel_batches": {"A.TO.B": batches[channels[0]], "B.TO.A": batches[channels[1]]},
        },
    )


def _agents_running(run: _Run, channels: tuple[str, ...], timeout_s: float = 30) -> None:
    """Wait until both agents hold their channels' leases (so that their start-up is not
    timed)."""
    end = time.monotonic() + timeout_s
    while Channel.objects.filter(name__in=channels, state="running").exclude(lease_holder="").count() < len(channels):
        if run.stop.is_set():
            return
        if time.monotonic() > end:
            raise BenchmarkError(f"{run.label}: the channel agents did not start within {timeout_s:g} s.")
        time.sleep(0.02)


# --- the whole run, in the child process -----------------------------------------------------


def run_pipelines(
    *,
    prefix: str,
    stages: int,
    messages: int,
    work_ms: float,
    only: str | None = None,
    progress: bool = False,
    results: list[PipelineResult] | None = None,
    batch_interval_ms: int = CHANNEL_BATCH_INTERVAL_MS,
    window: int = CHANNEL_WINDOW,
    long_uow_ms: float = 0,
    warm_up: bool = True,
    repeat: int = 1,
) -> list[PipelineResult]:
    """Warm up (imports, first connections, the code paths, at tiny sizes; not with
    ``warm_up=False``), then each scenario asked for with pre-emptive gets off, then on,
    ``repeat`` times (rounds alternated). Each result is appended to ``results`` (if given)
    as soon as its run ends, so a caller keeps them if a later run fails."""

    def say(text: str) -> None:
        if progress:
            print(f"  {text}", file=sys.stderr, flush=True)

    scenarios = [s for s in IN_PROCESS if only in (None, s)]
    if warm_up:
        say("warming up")
    for preemptive in (False, True) if warm_up else ():
        if "chain" in scenarios:
            run_chain(prefix=prefix, stages=1, messages=3, work_ms=0, preemptive=preemptive, tag="WARM")
        if "request-reply" in scenarios:
            run_request_reply(
                prefix=prefix,
                messages=3,
                work_ms=0,
                preemptive=preemptive,
                tag="WARMRR",
                batch_interval_ms=batch_interval_ms,
                window=window,
            )
    results = [] if results is None else results
    for scenario in scenarios:
        for n, preemptive in alternated(repeat):
            say(f"{scenario}, pre-emptive gets {'on' if preemptive else 'off'}")
            if scenario == "chain":
                result = run_chain(
                    prefix=prefix,
                    stages=stages,
                    messages=messages,
                    work_ms=work_ms,
                    preemptive=preemptive,
                    tag=f"CHAIN{n or ''}",
                )
            else:
                result = run_request_reply(
                    prefix=prefix,
                    messages=messages,
                    work_ms=work_ms,
                    preemptive=preemptive,
                    tag=f"RR{n or ''}",
                    batch_interval_ms=batch_interval_ms,
                    window=window,
                    long_uow_ms=long_uow_ms,
                )
            say(f"  {result.seconds:.3f} s")
            results.append(result)
    return results


def pipelines_cleanup(*, prefix: str) -> None:
    """Remove what a run left on a database that is not a throw-away file: its channels and
    their receipts, then its brokers (with their queues, messages, units of work and journal)."""
    mine = f"{prefix}."
    Channel.objects.filter(name__startswith=mine).update(enabled=False)
    for txn in Transaction.objects.filter(broker__startswith=mine, state__in=OPEN_STATES).values_list("pk", flat=True):
        _rolled_back(txn)
    Channel.objects.filter(name__startswith=mine).delete()
    ChannelReceipt.objects.filter(channel_name__startswith=mine).delete()
    for broker in Broker.objects.filter(name__startswith=mine).values_list("name", flat=True):
        scratch_cleanup(broker=broker)


# --- the printed table ----------------------------------------------------------------------

HEADER = ("scenario", "pre-emptive", "stages", "messages", "work ms", "seconds", "msgs/s")
RATIO_HEADER = ("scenario", "off s", "on s", "off/on")
ROW = re.compile(
    r"^(?P<scenario>[a-z][a-z-]*)\s+(?P<preemptive>off|on)\s+(?P<stages>\d+|-)\s+(?P<messages>\d+)\s+"
    r"(?P<work_ms>[\d.]+)\s+(?P<seconds>[\d.]+)\s+(?P<rate>[\d.]+)\s*$"
)
RATIO_ROW = re.compile(r"^(?P<scenario>[a-z][a-z-]*)\s+(?P<off>[\d.]+)\s+(?P<on>[\d.]+)\s+(?P<ratio>[\d.]+)x\s*$")


def alternated(repeat: int) -> list[tuple[int, bool]]:
    """The runs of a scenario: (round, pre-emptive), off then on in each of ``repeat`` rounds."""
    return [(n, preemptive) for n in range(repeat) for preemptive in (False, True)]


def ratios(results: list[PipelineResult]) -> list[tuple[str, float, float, float]]:
    """Per scenario measured both ways: off seconds, on seconds (each the median of its
    rounds: the lower middle of an even count), off / on."""
    out = []
    for scenario in SCENARIOS:
        off = sorted(r.seconds for r in results if r.scenario == scenario and not r.preemptive)
        on = sorted(r.seconds for r in results if r.scenario == scenario and r.preemptive)
        if off and on:
            off_s, on_s = off[(len(off) - 1) // 2], on[(len(on) - 1) // 2]
            if on_s > 0:
                out.append((scenario, off_s, on_s, off_s / on_s))
    return out


def table(results: list[PipelineResult]) -> str:
    rows = [HEADER] + [
        (
            r.scenario,
            "on" if r.preemptive else "off",
            "-" if r.stages is None else str(r.stages),
            str(r.messages),
            f"{r.work_ms:g}",
            f"{r.seconds:.3f}",
            f"{r.rate:.1f}",
        )
        for r in results
    ]
    text = grid(rows)
    pairs = ratios(results)
    if pairs:
        text += "\n\n" + grid(
            [RATIO_HEADER]
            + [(scenario, f"{off:.3f}", f"{on:.3f}", f"{ratio:.2f}x") for scenario, off, on, ratio in pairs]
        )
    return text


def table_parse(text: str) -> dict[str, list[dict]]:
    """The rows of a printed report: ``results`` and ``ratios`` (for tests and scripts)."""
    parsed: dict[str, list[dict]] = {"results": [], "ratios": []}
    for line in text.splitlines():
        line = line.strip()
        if m := ROW.match(line):
            parsed["results"].append(
                {
                    "scenario": m["scenario"],
                    "preemptive": m["preemptive"] == "on",
                    "stages": None if m["stages"] == "-" else int(m["stages"]),
                    "messages": int(m["messages"]),
                    "work_ms": float(m["work_ms"]),
                    "seconds": float(m["seconds"]),
                    "rate": float(m["rate"]),
                }
            )
        elif m := RATIO_ROW.match(line):
            parsed["ratios"].append(
                {
                    "scenario": m["scenario"],
                    "off": float(m["off"]),
                    "on": float(m["on"]),
                    "ratio": float(m["ratio"]),
                }
            )
    return parsed

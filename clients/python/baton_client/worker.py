"""Step workers: serve a workflow's steps (and their compensations) with plain functions.

::

    worker = StepWorker(client, broker="WF", workflow="claim")

    @worker.step("validate")
    def validate(request: StepRequest) -> Output:
        claim = request.json()
        return Output(output={"body": ..., "priority": 5}, compensation=f"unvalidate {claim['id']}")

    @worker.compensation("validate")
    def unvalidate(request: StepRequest) -> None:
        ...

    with worker:  # started: N threads per function; stopped (cleanly) at the end of the block
        ...

For each request the worker takes (a get that begins its unit of work only when it takes
something, ``batch`` requests at a time, pre-emptively if asked), it calls the function; the
steps are completed with what the functions returned (``output``: the next step(s)' request;
``compensation``: the request its compensation will be, should the saga need it) and the
unit of work committed with the last of them, in one call (``complete_steps(...,
commit=True)``: one database transaction on the server). A batch is one unit of work.

Early reports: in a batch that is not full (the worker keeps up with its queue; a full one
means requests wait, every worker is busy and none would take a request early), once
``report_every`` seconds have passed since the unit of work began (or since the last early
report), and the batch's work still to do (estimated from what it took so far) is as long,
the steps done so far are completed in it at once, uncommitted,
in one call sent without waiting for its answer (``complete_steps(..., nowait=True)``): the
server applies it while the next function runs, so their next requests are on their queues
for a pre-emptive worker downstream to take before this unit of work commits. The answers
are read before the commit. Each costs the server a call and a database transaction, so by
default only a pre-emptive worker reports early (every 5 ms of work; a workflow runs
pre-emptively when its workers do); a normal one reports everything with the commit.

A function that raises ``StepFailed(reason)`` fails the step (``fail_step`` in its unit of
work, committed with it): the instance fails at once and is compensated. Any other exception
rolls the unit of work back: its requests go back to their queue with
their backout count raised, and the worker backs off (``backoff`` seconds, doubled per
consecutive failure up to ``max_backoff``) before it takes again. The platform does the
rest: a request backed out as often as its queue's backout threshold says goes to the backout
queue (or dead-letter queue), and the workflow's instance fails and is compensated (a
compensation request so moved leaves it ``compensation_failed`` for a person). A request of
an instance that is no longer running is refused by the server (``WorkflowConflict``): the
worker consumes it without calling anything more. A held commit (a request taken
pre-emptively from a unit of work still open) happens by itself when that one commits;
``commit_wait`` seconds are waited for it (0: the worker goes on at once).

``stop()`` (or the end of the ``with`` block) lets each thread finish the unit of work it is
in and return; a thread waiting for a request stops within ``wait`` seconds.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from .client import Client, Message, PendingReply, Transaction
from .errors import BatonError, NetworkError, NotFound, TransactionBackedOut, WorkflowConflict

__all__ = ["Output", "StepFailed", "StepRequest", "StepWorker"]

log = logging.getLogger("baton_client.worker")

#: A pre-emptive worker's ``report_every`` by default (seconds).
EARLY_REPORTS = 0.005


@dataclass(frozen=True)
class Output:
    """What a step function returns: ``output``, the next step(s)' request, and
    ``compensation``, this step's compensation request (each a body: str or bytes, or a dict
    of message fields). A function returning None completes the step with neither."""

    output: Any = None
    compensation: Any = None


class StepFailed(Exception):
    """Raised by a step function for a failure that retrying cannot mend (a claim over its
    limit, a card declined): the worker reports the step failed in the request's unit of
    work and commits, and the instance fails at once; its committed steps are compensated."""

    def __init__(self, reason: str = "") -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class StepRequest:
    """A step's (or a compensation's) request, as a function receives it."""

    message: Message
    instance: str
    workflow: str
    step: str
    compensation: bool
    transaction: str

    @property
    def body(self) -> bytes:
        return self.message.body

    @property
    def text(self) -> str:
        return self.message.text

    def json(self) -> Any:
        return json.loads(self.message.body)

    @property
    def backout_count(self) -> int:
        """How often this request was backed out before (0 the first time)."""
        return self.message.backout_count


def _completions(served: list[tuple[StepRequest, Output]]) -> list[dict]:
    return [
        {"instance": r.instance, "step": r.step, "output": o.output, "compensation": o.compensation} for r, o in served
    ]


@dataclass
class _Handler:
    step: str
    queue: str
    compensation: bool
    function: Callable[[StepRequest], Any]
    threads: list[threading.Thread] = field(default_factory=list)


class StepWorker:
    """Serve steps of ``workflow`` (their queues are read from its definition) or, with
    ``queue=`` given to :meth:`step`, of any workflow. ``threads``: how many requests of each
    function are worked on at once; ``batch``: how many requests a thread takes under one
    unit of work; ``preemptive``: take requests whose put is not committed yet (the commit is
    then held until it is); ``wait``: how long a get waits for a request (the server wakes it
    when one is put); ``report_every``: seconds of work after which the steps done are
    reported before the commit (0: each at once; None: ``EARLY_REPORTS`` for a pre-emptive
    worker, else never: all with the commit)."""

    def __init__(
        self,
        client: Client,
        *,
        broker: str,
        workflow: str | None = None,
        threads: int = 1,
        batch: int = 1,
        preemptive: bool = False,
        wait: float = 2.0,
        commit_wait: float = 0.0,
        report_every: float | None = None,
        backoff: float = 0.1,
        max_backoff: float = 10.0,
    ) -> None:
        if threads < 1 or batch < 1:
            raise ValueError("threads and batch are at least 1.")
        self.client = client
        self.broker = broker
        self.workflow = workflow
        self.threads = threads
        self.batch = batch
        self.preemptive = preemptive
        self.wait = wait
        self.commit_wait = commit_wait
        if report_every is None:  # early reports cost the server a call each: for pre-emptive pipelines only
            report_every = EARLY_REPORTS if preemptive else float("inf")
        self.report_every = report_every
        self.backoff = backoff
        self.max_backoff = max_backoff
        self._handlers: list[_Handler] = []
        self._queues: dict[str, tuple[str, str]] | None = None
        self._stopping = threading.Event()
        self._started = False
        #: Requests whose step (or compensation) this worker completed and committed (or held).
        self.completed = 0
        #: Units of work rolled back because a function raised.
        self.failures = 0
        self._count_lock = threading.Lock()

    # -- registration --------------------------------------------------------------------
    def step(self, name: str, *, queue: str | None = None) -> Callable:
        """Decorator: ``function(request) -> Output | None`` serves step ``name``."""
        return self._register(name, queue, compensation=False)

    def compensation(self, name: str, *, queue: str | None = None) -> Callable:
        """Decorator: ``function(request) -> None`` undoes step ``name`` (its compensation
        request carries what the step's ``Output.compensation`` said)."""
        return self._register(name, queue, compensation=True)

    def _register(self, name: str, queue: str | None, *, compensation: bool) -> Callable:
        if self._started:
            raise RuntimeError("Register functions before the worker starts.")

        def decorator(function: Callable[[StepRequest], Any]) -> Callable[[StepRequest], Any]:
            self._handlers.append(_Handler(name, queue or "", compensation, function))
            return function

        return decorator

    def _queue_of(self, handler: _Handler) -> str:
        if handler.queue:
            return handler.queue
        if self.workflow is None:
            raise ValueError(f"Step {handler.step!r}: name its queue, or the worker's workflow.")
        if self._queues is None:
            shown = self.client.display_workflow(self.broker, self.workflow)
            self._queues = {s["name"]: (s["queue"], s["compensation_queue"]) for s in shown["steps"]}
        if handler.step not in self._queues:
            raise ValueError(f"Workflow {self.workflow!r} has no step {handler.step!r}.")
        return self._queues[handler.step][1 if handler.compensation else 0]

    # -- running -------------------------------------------------------------------------
    def start(self) -> "StepWorker":
        """Start ``threads`` threads per registered function; returns at once."""
        if self._started:
            return self
        if not self._handlers:
            raise RuntimeError("No step or compensation function is registered.")
        for handler in self._handlers:
            handler.queue = self._queue_of(handler)
        self._started = True
        self._stopping.clear()
        for handler in self._handlers:
            for n in range(self.threads):
                thread = threading.Thread(
                    target=self._serve,
                    args=(handler,),
                    name=f"baton-step-{handler.step}{'-undo' if handler.compensation else ''}-{n}",
                    daemon=True,
                )
                handler.threads.append(thread)
                thread.start()
        return self

    def stop(self, timeout: float | None = None) -> None:
        """Stop: each thread finishes the unit of work it is in; waits for them (up to
        ``timeout`` seconds each)."""
        self._stopping.set()
        for handler in self._handlers:
            for thread in handler.threads:
                thread.join(timeout)
            handler.threads = [t for t in handler.threads if t.is_alive()]
        self._started = any(h.threads for h in self._handlers)

    def run(self) -> None:
        """Start and serve until :meth:`stop` is called (from another thread or a signal handler)."""
        self.start()
        self._stopping.wait()
        self.stop()

    def __enter__(self) -> "StepWorker":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._started and not self._stopping.is_set()

    # -- one thread ----------------------------------------------------------------------
    def _serve(self, handler: _Handler) -> None:
        failures = 0
        while not self._stopping.is_set():
            try:
                batch = self.client.get(
                    self.broker,
                    handler.queue,
                    wait=self.wait,
                    batch=self.batch,
                    syncpoint="yes",
                    preemptive=self.preemptive,
                )
            except BatonError as exc:
                failures += 1
                log.warning("get from %s failed: %s", handler.queue, exc)
                self._stopping.wait(self._delay(failures))
                continue
            if not batch:
                continue
            if self._work(handler, list(batch), batch.transaction):
                failures = 0
            else:
                failures += 1
                self._stopping.wait(self._delay(failures))

    def _delay(self, failures: int) -> float:
        return min(self.max_backoff, self.backoff * 2 ** max(0, failures - 1))

    def _work(self, handler: _Handler, messages: list[Message], transaction: str) -> bool:
        """Serve the requests of one unit of work; False when it was rolled back.

        In a batch that is not full (the worker keeps up with its queue), the steps whose
        functions have returned are reported (completed, uncommitted) once ``report_every``
        seconds have passed since the unit of work began or since the last report, if the
        batch's work still to do (estimated from what it took so far) is as long, in one call
        sent without waiting for its answer: the server applies it while the next function
        runs, and those steps' next requests are then on their queues for a pre-emptive worker
        downstream to take before this unit of work commits. The rest are reported with the
        commit, in one call, once the answers to the others have been read."""
        done = 0
        # a full batch means more requests wait: every worker is busy, nothing downstream
        # would take a request early, so all are reported with the commit (the cheapest)
        early = not handler.compensation and len(messages) < self.batch
        served: list[tuple[StepRequest, Output]] = []
        sent: list[tuple[list[tuple[StepRequest, Output]], PendingReply]] = []
        began = since = time.monotonic()
        try:
            for index, message in enumerate(messages):
                request = self._request(handler, message, transaction)
                try:
                    result = handler.function(request)
                except StepFailed as failed:
                    if handler.compensation:
                        raise
                    try:
                        self.client.fail_step(
                            request.instance, request.step, failed.reason or "failed", transaction=transaction
                        )
                        done += 1
                    except WorkflowConflict as exc:  # its instance no longer runs: consumed, nothing more
                        log.info("request %s of instance %s: %s", message.msg_id, request.instance, exc)
                    continue
                served.append((request, result if isinstance(result, Output) else Output()))
                now = time.monotonic()
                left = (len(messages) - index - 1) * (now - began) / (index + 1)  # the batch's work still to do
                if early and index < len(messages) - 1 and min(now - since, left) >= self.report_every:
                    sent.append((served, self.client.complete_steps(transaction, _completions(served), nowait=True)))
                    served, since = [], now
            for group, reply in sent:  # a group refused (an instance no longer runs) did nothing
                try:
                    reply.result()
                    done += len(group)
                except WorkflowConflict as exc:
                    log.info("unit of work %s: %s; those steps reported with the rest", transaction, exc)
                    served = group + served
            done += self._reported(handler, served, transaction)
        except TransactionBackedOut as exc:  # backed out meanwhile (a cascade, a timeout): taken again
            log.info("unit of work %s was backed out: %s", transaction, exc)
            return True
        except Exception as exc:  # the function (or the platform) failed: roll back, back off
            log.warning(
                "%s %s failed, rolling back: %r", "compensation" if handler.compensation else "step", handler.step, exc
            )
            self._rolled_back(transaction)
            with self._count_lock:
                self.failures += 1
            return False
        with self._count_lock:
            self.completed += done
        return True

    @staticmethod
    def _request(handler: _Handler, message: Message, transaction: str) -> StepRequest:
        tag = (message.properties or {}).get("workflow") or {}
        return StepRequest(
            message=message,
            instance=tag.get("instance", ""),
            workflow=tag.get("workflow", ""),
            step=tag.get("step", handler.step),
            compensation=bool(tag.get("compensation")),
            transaction=transaction,
        )

    def _reported(self, handler: _Handler, served: list[tuple[StepRequest, Output]], transaction: str) -> int:
        """Report what is left of the unit of work and commit it: the steps completed all
        in one call with the commit (one database transaction on the server). Should the
        server refuse one (its instance no longer runs: nothing of the call was done), and for
        compensations, they are reported one by one, the last with the commit, the refused
        ones consumed. Returns how many were reported."""
        if served and not handler.compensation:
            try:
                self.client.complete_steps(transaction, _completions(served), commit=True, wait=self.commit_wait)
                return len(served)
            except WorkflowConflict as exc:
                log.info("unit of work %s: %s; its steps reported one by one", transaction, exc)
        done, committed = 0, False
        for index, (request, output) in enumerate(served):  # the last one commits
            last = index == len(served) - 1
            try:
                if handler.compensation:
                    self.client.step_compensated(
                        request.instance, request.step, transaction, commit=last, wait=self.commit_wait
                    )
                else:
                    self.client.complete_step(
                        request.instance,
                        request.step,
                        transaction,
                        output=output.output,
                        compensation=output.compensation,
                        commit=last,
                        wait=self.commit_wait,
                    )
                done += 1
                committed = last
            except WorkflowConflict as exc:  # its instance no longer runs: consumed, nothing more
                log.info("request %s of instance %s: %s", request.message.msg_id, request.instance, exc)
        if not committed:  # the last one was refused (or none was left): commit what was got and done
            Transaction(self.client, {"id": transaction, "broker": self.broker}).commit(wait=self.commit_wait)
        return done

    def _rolled_back(self, transaction: str) -> None:
        try:
            Transaction(self.client, {"id": transaction, "broker": self.broker}).rollback()
        except (NotFound, NetworkError, BatonError) as exc:  # its timeout rolls it back anyway
            log.warning("rollback of %s failed: %s", transaction, exc)

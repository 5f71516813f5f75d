"""Mixed load against a live platform, recorded as a history the total-queue checker
(``checker.py``) judges: what each client was told, and what it could not know.

The topology: broker A with WORK (where producers put) and FWD, a remote queue to B's IN
through the transmission queue XQ and a pre-emptive channel A → B; broker B with IN. Both
brokers have short transaction timeouts, so a unit of work a client lost track of is rolled
back by housekeeping soon.

The clients, each a thread with its own connection (baton_client):

- **producers** put messages with unique bodies on WORK: immediately (no unit of work), or
  under a unit of work they commit, roll back, or abandon to its timeout;
- **consumers** get from WORK under a unit of work — mostly pre-emptively, so they may take
  uncommitted puts and have their commits held on the producers — forward what they got to
  FWD in the same unit of work, and commit;
- the **channel** moves FWD's messages from XQ to B's IN in numbered batches;
- **peek-lock consumers** lock messages on IN and complete them (immediately, or under a
  unit of work on B), or abandon some.

Clients retry through failures as a real client would: a call whose reply never came is
*indeterminate*. A unit of work is asked to commit only when every call under it was
answered; a commit whose reply never came is settled by reading the unit of work's state
once the server answers again (committing again if it is still open). A put whose reply
never came is recorded as indeterminate and not retried (a retry could put it twice).
"""

from __future__ import annotations

import itertools
import json
import os
import random
import sys
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from baton_client import (
    BatonClientError,
    Client,
    CommitResult,
    Message,
    NetworkError,
    PendingPut,
    ServerError,
    Throttled,
    Transaction,
    TransactionBackedOut,
)

BROKER_A, BROKER_B = "SOURCE", "TARGET"
WORK, FWD, XQ, IN = "WORK", "FWD", "XQ", "IN"
CHANNEL = "SOURCE.TO.TARGET"
#: Queues whose final contents the checker reads: (broker, queue, stage); the dead-letter
#: queues are added once the brokers are defined.
STAGE_QUEUES = [(BROKER_A, WORK, "work"), (BROKER_A, XQ, "down"), (BROKER_B, IN, "down")]

ANSWERED, REFUSED, UNKNOWN = "answered", "refused", "unknown"


@dataclass
class Settings:
    """How the load behaves; defaults suit the crash test."""

    producers: int = 2
    consumers: int = 2
    lockers: int = 2
    transaction_timeout_ms: int = 4000
    lock_duration_ms: int = 3000
    channel_batch_size: int = 20
    channel_batch_interval_ms: int = 100
    #: Seconds each client pauses between its rounds (0: as fast as it can).
    pause_s: float = 0.0
    #: Added to ``pause_s`` for producers, so that a long run does not fill the queues.
    producer_pause_s: float = 0.0
    #: How long a client keeps trying to settle a unit of work whose outcome it did not hear.
    settle_s: float = 60.0
    request_timeout_s: float = 15.0


@dataclass
class History:
    """What the clients were told. Ids are message bodies, unique per put."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    #: body → "ack" (committed, and told so), "failed" (never committed: refused, rolled back,
    #: or in a unit of work never asked to commit), "unknown" (the reply never came).
    puts: dict[str, str] = field(default_factory=dict)
    #: gets from WORK by consumers whose unit of work committed (told so) / may have.
    consumed: Counter = field(default_factory=Counter)
    consumed_unknown: Counter = field(default_factory=Counter)
    #: peek-lock completions on IN, acknowledged / whose reply never came.
    delivered: Counter = field(default_factory=Counter)
    delivered_unknown: Counter = field(default_factory=Counter)
    #: bodies seen by a get that is not pre-emptive (so must have been committed), by stage,
    #: with the (monotonic) time the first such reply arrived.
    seen: dict[str, dict] = field(default_factory=lambda: {"work": {}, "down": {}})
    #: when a body's producer first asked to commit it (or sent its put outside a unit of
    #: work): before then nobody may see it but a pre-emptive get.
    asked: dict[str, float] = field(default_factory=dict)
    #: when a consumer whose commit went through (or may have) first asked to commit its
    #: forward of a body: before then it may not be seen downstream.
    forward_asked: dict[str, float] = field(default_factory=dict)
    operations: int = 0
    indeterminate_calls: int = 0
    units: Counter = field(default_factory=Counter)  # outcome of each unit of work a client ran
    #: Where every client step is written, one JSON object a line (``trace_open``), so that a
    #: finding can be explained from what the clients did (bench/diagnosis.py); on disk, not
    #: in memory, so that a long run's load process stays flat.
    trace_path: str | None = None
    _trace: Any = None

    def trace_open(self, path: str) -> None:
        self.trace_path = path
        self._trace = open(path, "w", encoding="utf-8")  # noqa: SIM115 - closed by trace_close

    def trace_close(self) -> None:
        with self.lock:
            if self._trace is not None:
                self._trace.close()
                self._trace = None

    def trace(self, actor: str, step: str, **fields: Any) -> None:
        """One client step: ``bodies``, ``txn``, ``outcome`` and what else it learnt."""
        if self._trace is None:
            return
        at = datetime.now(timezone.utc).isoformat(timespec="microseconds")  # beside the journal's times
        line = json.dumps({"at": at, "actor": actor, "step": step, **fields}, default=str)
        with self.lock:
            if self._trace is not None:
                self._trace.write(line + "\n")

    def put(self, bodies: list[str], status: str) -> None:
        with self.lock:
            for body in bodies:
                self.puts[body] = status

    def count(self, counter: str, bodies: list[str]) -> None:
        with self.lock:
            getattr(self, counter).update(bodies)

    def saw(self, stage: str, bodies: list[str]) -> None:
        now = time.monotonic()
        with self.lock:
            for body in bodies:
                self.seen[stage].setdefault(body, now)

    def asked_at(self, bodies: list[str], when: float, *, forward: bool = False) -> None:
        with self.lock:
            times = self.forward_asked if forward else self.asked
            for body in bodies:
                times[body] = min(times.get(body, when), when)

    def unit(self, outcome: str) -> None:
        with self.lock:
            self.units[outcome] += 1

    def call(self, outcome: str) -> None:
        with self.lock:
            self.operations += 1
            if outcome == UNKNOWN:
                self.indeterminate_calls += 1


def topology_define(client: Client, settings: Settings) -> list[tuple[str, str, str]]:
    """Define the brokers, queues and channel, start the channel; return the queues the
    checker reads at the end, with their stage."""
    for broker in (BROKER_A, BROKER_B):
        client.define_broker(
            broker, transaction_timeout_ms=settings.transaction_timeout_ms, description="crash test and soak load"
        )
    client.define_queue(BROKER_A, WORK, max_depth=1_000_000)
    client.define_queue(BROKER_A, XQ, usage="transmission", max_depth=1_000_000)
    client.define_queue(BROKER_A, FWD, kind="remote", remote_broker=BROKER_B, remote_queue=IN, transmission_queue=XQ)
    client.define_queue(BROKER_B, IN, max_depth=1_000_000, lock_duration_ms=settings.lock_duration_ms)
    client._request(
        "POST",
        "/api/channels/",
        json={
            "name": CHANNEL,
            "source_broker": BROKER_A,
            "transmission_queue": XQ,
            "target_broker": BROKER_B,
            "batch_size": settings.channel_batch_size,
            "batch_interval_ms": settings.channel_batch_interval_ms,
            "preemptive": True,
        },
    )
    client._request("POST", f"/api/channels/{CHANNEL}/start/", json={})
    queues = list(STAGE_QUEUES)
    for broker, stage in ((BROKER_A, "work"), (BROKER_B, "down")):
        queues.append((broker, client.display_broker(broker)["dead_letter_queue"], stage))
    return queues


class Actor(threading.Thread):
    """A client thread: runs rounds until told to stop."""

    kind = "actor"

    def __init__(
        self,
        index: int,
        *,
        url: str,
        token: str,
        history: History,
        settings: Settings,
        stop: threading.Event,
        seed: int,
    ) -> None:
        super().__init__(name=f"{self.kind}-{index}", daemon=True)
        self.index = index
        self.url, self.token = url, token
        self.history, self.settings, self.stop = history, settings, stop
        self.rng = random.Random(seed)
        self.client = Client(
            url, token, timeout=settings.request_timeout_s, transport=os.environ.get("BATON_CRASH_TRANSPORT", "session")
        )
        self.error: BaseException | None = None
        self._numbers = itertools.count(1)

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                self.round()
                if self.pause_s:
                    self.stop.wait(self.pause_s)
        except BaseException as exc:  # noqa: BLE001 - reported by whoever joins the load
            self.error = exc
        finally:
            self.client.close()

    @property
    def pause_s(self) -> float:
        return self.settings.pause_s

    def round(self) -> None:
        raise NotImplementedError

    # -- calls and their outcomes -----------------------------------------------------------
    def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[str, Any]:
        """(answered, value), (refused, error) when the server answered no, or (unknown,
        error) when no reply came or the server failed (it may or may not have acted)."""
        try:
            value = fn(*args, **kwargs)
        except Throttled as exc:
            outcome, value = REFUSED, exc
            self.stop.wait(1.0)
        except (NetworkError, ServerError) as exc:
            outcome, value = UNKNOWN, exc
        except BatonClientError as exc:
            outcome, value = (UNKNOWN, exc) if (exc.status or 0) >= 500 else (REFUSED, exc)
        else:
            outcome = ANSWERED
        self.history.call(outcome)
        if outcome == UNKNOWN:
            self.server_awaited()
        return outcome, value

    def server_awaited(self, timeout: float = 120) -> bool:
        """After a call without reply: wait (bounded) until the server answers again."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                self.client.display_broker(BROKER_A)
                return True
            except BatonClientError:
                time.sleep(0.1)  # polling interval of a bounded loop
        return False

    def note(self, step: str, **fields: Any) -> None:
        self.history.trace(self.name, step, **fields)

    def rolled_back(self, txn: Any) -> None:
        """Roll back (best effort: if no reply comes the unit of work times out)."""
        outcome, value = self.call(txn.rollback)
        self.note("rollback", txn=txn.id, outcome=outcome, **_told(outcome, value))

    def settled(self, txn: Any, *, committed_already: str | None = None) -> str:
        """Drive a unit of work the client asked to commit to its end: "committed",
        "rolled_back", or "unknown" if that could not be learnt within ``settle_s``."""
        deadline = time.monotonic() + self.settings.settle_s
        outcome = committed_already
        while time.monotonic() < deadline:
            if outcome is None:
                outcome, value = self.call(txn.commit, wait=2)
                self.note("commit", txn=txn.id, outcome=outcome, **_told(outcome, value))
                if outcome == ANSWERED and value.committed:
                    return "committed"
                if outcome == REFUSED and isinstance(value, TransactionBackedOut):
                    return "rolled_back"
                if outcome == ANSWERED:  # held: keep asking
                    outcome = None
                    continue
            # no reply, or refused for another reason: read the unit of work's state
            state_outcome, value = self.call(txn.refresh)
            self.note("refresh", txn=txn.id, outcome=state_outcome, state=txn.state, reason=txn.reason)
            outcome = None
            if state_outcome == ANSWERED:
                if txn.state == "committed":
                    return "committed"
                if txn.state == "rolled_back":
                    return "rolled_back"
        return "unknown"

    def body(self) -> str:
        return f"{self.kind}{self.index}-{next(self._numbers)}"


class Producer(Actor):
    kind = "p"

    @property
    def pause_s(self) -> float:
        return self.settings.pause_s + self.settings.producer_pause_s

    def round(self) -> None:
        roll = self.rng.random()
        if roll < 0.3:
            body = self.body()
            self.history.put([body], "pending")
            self.history.asked_at([body], time.monotonic())
            outcome, value = self.call(self.client.put, BROKER_A, WORK, body, persistence="persistent", syncpoint="no")
            self.note("put", bodies=[body], outcome=outcome, **_told(outcome, value))
            self.history.put([body], {ANSWERED: "ack", REFUSED: "failed", UNKNOWN: "unknown"}[outcome])
            return
        outcome, txn = self.call(self.client.transaction, BROKER_A)
        if outcome != ANSWERED:
            self.note("begin", outcome=outcome, **_told(outcome, txn))
            return  # an orphan, if it was made, times out
        bodies: list[str] = []
        puts: list[Any] = []
        for _ in range(1 + (self.rng.random() < 0.3)):
            batch = [self.body() for _ in range(self.rng.randint(1, 4))]
            bodies += batch
            self.history.put(batch, "pending")
            outcome, put = self.call(self.client.put, BROKER_A, WORK, messages=batch, transaction=txn)
            self.note("put", txn=txn.id, bodies=batch, outcome=outcome, **_told(outcome, put))
            puts.append(put)
            if outcome != ANSWERED:  # not sure what is under it: never commit it
                self.rolled_back(txn)
                self.history.put(bodies, "failed")
                self.history.unit("abandoned")
                return
        choice = self.rng.random()
        if choice < 0.1:
            self.rolled_back(txn)
            self.history.put(bodies, "failed")
            self.history.unit("rolled_back")
        elif choice < 0.15:
            self.note("abandon", txn=txn.id, bodies=bodies)
            self.history.put(bodies, "failed")  # left to its timeout
            self.history.unit("abandoned")
        else:
            self.history.asked_at(bodies, time.monotonic())
            end = self.settled(txn)
            self.note("end", txn=txn.id, bodies=bodies, end=end, puts=[_pipelined(p) for p in puts])
            self.history.put(bodies, {"committed": "ack", "rolled_back": "failed", "unknown": "unknown"}[end])
            self.history.unit(end)


class Consumer(Actor):
    """Gets from WORK under a unit of work (pre-emptively, mostly), forwards what it got to
    the remote queue FWD in the same unit of work, and commits."""

    kind = "c"

    def round(self) -> None:
        outcome, txn = self.call(self.client.transaction, BROKER_A)
        if outcome != ANSWERED:
            self.note("begin", outcome=outcome, **_told(outcome, txn))
            return
        preemptive = self.rng.random() < 0.7
        outcome, batch = self.call(
            self.client.get, BROKER_A, WORK, transaction=txn, preemptive=preemptive, batch=5, wait=1
        )
        if outcome != ANSWERED or not batch:
            if outcome != ANSWERED:
                self.note("get", txn=txn.id, preemptive=preemptive, outcome=outcome, **_told(outcome, batch))
            self.rolled_back(txn)
            return
        bodies = [m.text for m in batch]
        self.note("get", txn=txn.id, preemptive=preemptive, outcome=outcome, bodies=bodies, **_told(outcome, batch))
        if not preemptive:
            self.history.saw("work", bodies)
        outcome, put = self.call(self.client.put, BROKER_A, FWD, messages=bodies, transaction=txn)
        self.note("forward", txn=txn.id, bodies=bodies, outcome=outcome, **_told(outcome, put))
        if outcome != ANSWERED:
            self.rolled_back(txn)
            self.history.unit("abandoned")
            return
        asked = time.monotonic()
        end = self.settled(txn)
        self.note("end", txn=txn.id, bodies=bodies, end=end, puts=[_pipelined(put)])
        self.history.unit(end)
        if end in ("committed", "unknown"):
            self.history.asked_at(bodies, asked, forward=True)
        if end == "committed":
            self.history.count("consumed", bodies)
        elif end == "unknown":
            self.history.count("consumed_unknown", bodies)


class Locker(Actor):
    """Peek-locks messages on IN and completes them: one by one, or under a unit of work on
    B; abandons some."""

    kind = "l"

    def round(self) -> None:
        outcome, batch = self.call(self.client.get, BROKER_B, IN, mode="peek_lock", batch=5, wait=1)
        if outcome != ANSWERED or not batch:
            if outcome != ANSWERED:
                self.note("lock", outcome=outcome, **_told(outcome, batch))
            return
        self.note("lock", bodies=[m.text for m in batch], outcome=outcome, **_told(outcome, batch))
        self.history.saw("down", [m.text for m in batch])
        messages = list(batch)
        if self.rng.random() < 0.1:
            message = messages.pop()
            outcome, value = self.call(message.abandon)
            self.note("abandon", bodies=[message.text], outcome=outcome, **_told(outcome, value))
        if not messages:
            return
        if self.rng.random() < 0.3:
            self.completed_in_unit(messages)
            return
        for message in messages:
            self.completed(message)

    def completed(self, message: Message) -> None:
        outcome, value = self.call(message.complete)
        self.note("complete", bodies=[message.text], outcome=outcome, **_told(outcome, value))
        if outcome == UNKNOWN:  # ask again: the lock is gone if the first one removed it
            outcome, value = self.call(message.complete)
            self.note("complete", bodies=[message.text], outcome=outcome, again=True, **_told(outcome, value))
            if outcome != ANSWERED:
                self.history.count("delivered_unknown", [message.text])
                return
        if outcome == ANSWERED:
            self.history.count("delivered", [message.text])

    def completed_in_unit(self, messages: list[Message]) -> None:
        outcome, txn = self.call(self.client.transaction, BROKER_B)
        if outcome != ANSWERED:
            self.note("begin", outcome=outcome, **_told(outcome, txn))
            return
        for message in messages:
            outcome, value = self.call(message.complete, txn)
            self.note("complete", txn=txn.id, bodies=[message.text], outcome=outcome, **_told(outcome, value))
            if outcome != ANSWERED:
                self.rolled_back(txn)
                self.history.unit("abandoned")
                return
        end = self.settled(txn)
        bodies = [m.text for m in messages]
        self.note("end", txn=txn.id, bodies=bodies, end=end)
        self.history.unit(end)
        if end == "committed":
            self.history.count("delivered", bodies)
        elif end == "unknown":
            self.history.count("delivered_unknown", bodies)


def _told(outcome: str, value: Any) -> dict[str, Any]:
    """What a call's reply told, for the trace: the error, a commit's state, the ids of the
    messages a get or put returned (a pipelined put's are read at its unit's end)."""
    if isinstance(value, BaseException):
        return {"error": f"{type(value).__name__}: {value}"[:300]}
    if isinstance(value, CommitResult):
        return {"state": value.state, "waiting_on": value.waiting_on}
    if isinstance(value, Message):
        return {"msg_ids": [value.msg_id]}
    if isinstance(value, list):
        return {"msg_ids": [m.msg_id for m in value if isinstance(m, Message)]}
    if isinstance(value, PendingPut):
        return {"pipelined": True}
    if isinstance(value, Transaction):
        return {"txn": value.id}
    if isinstance(value, str):
        return {"answer": value}
    return {}


def _pipelined(put: Any) -> dict[str, Any]:
    """A pipelined put's reply, if it came (never waits for it)."""
    if not isinstance(put, PendingPut):
        return _told(ANSWERED, put)
    if not put.done():
        return {"reply": "not read"}
    try:
        return {"msg_ids": [m.msg_id for m in put.result()]}
    except BatonClientError as exc:
        return {"error": f"{type(exc).__name__}: {exc}"[:300]}


class Load:
    """The clients, started together; stopped together or a kind at a time (e.g. producers
    and consumers first, so that the peek-lock consumers can drain what is left)."""

    def __init__(self, *, url: str | list[str], token: str, settings: Settings, seed: int = 0) -> None:
        """``url``: the platform, or its web servers (the scaled-out form): the clients are
        dealt out over them in turn, producers first."""
        self.history = History()
        #: Set once every client has been told to stop.
        self.stop = threading.Event()
        rng = random.Random(seed)
        urls = [url] if isinstance(url, str) else list(url)
        common = {"token": token, "history": self.history, "settings": settings}
        kinds = (
            [(Producer, i) for i in range(settings.producers)]
            + [(Consumer, i) for i in range(settings.consumers)]
            + [(Locker, i) for i in range(settings.lockers)]
        )
        self.actors: list[Actor] = [
            kind(i + 1, seed=rng.random(), stop=threading.Event(), url=urls[n % len(urls)], **common)
            for n, (kind, i) in enumerate(kinds)
        ]

    def start(self) -> None:
        for actor in self.actors:
            actor.start()

    def finish(self, *kinds: type[Actor], timeout: float = 180) -> None:
        """Stop the clients of these kinds (all by default) after their current round (which
        settles what it began)."""
        actors = [a for a in self.actors if not kinds or isinstance(a, kinds)]
        for actor in actors:
            actor.stop.set()
        if all(a.stop.is_set() for a in self.actors):
            self.stop.set()
        deadline = time.monotonic() + timeout
        for actor in actors:
            actor.join(max(0.1, deadline - time.monotonic()))
        stuck = [a for a in actors if a.is_alive()]
        if stuck:
            frames = sys._current_frames()
            where = "\n".join(
                f"{a.name}:\n{''.join(traceback.format_stack(frames[a.ident]))}" for a in stuck if a.ident in frames
            )
            raise RuntimeError(f"Clients still running {timeout:g} s after being stopped:\n{where}")
        errors = [(a.name, a.error) for a in actors if a.error is not None]
        if errors:
            name, error = errors[0]
            raise RuntimeError(f"Client {name} failed: {error!r}") from error


def queue_contents(client: Client, queues: list[tuple[str, str, str]]) -> dict[str, Counter]:
    """Bodies on each stage's queues (every committed message, locked and in flight ones too)."""
    contents = {"work": Counter(), "down": Counter()}
    for broker, queue, stage in queues:
        contents[stage].update(m.text for m in client.browse(broker, queue, ordered=True, page_size=500))
    return contents


def open_transactions(client: Client) -> list[dict]:
    """Units of work not resolved yet on either broker."""
    nodes = []
    for broker in (BROKER_A, BROKER_B):
        nodes += [
            n
            for n in client.transaction_graph(broker)["nodes"]
            if n["broker"] == broker and n["state"] in ("active", "commit_held")
        ]
    return nodes


def quiet(client: Client, queues: list[tuple[str, str, str]]) -> bool:
    """Nothing left in motion: no open unit of work, nothing on the transmission queue,
    nothing locked or in flight anywhere."""
    if open_transactions(client):
        return False
    for broker, queue, _ in queues:
        info = client.display_queue(broker, queue)
        if info.get("uncommitted_puts") or info.get("in_flight") or info.get("locked"):
            return False
    return not client.display_queue(BROKER_A, XQ).get("depth")

"""``manage.py benchmark_stomp``: the same stomp.py producer and consumer against Baton's
STOMP server and against RabbitMQ's STOMP plugin, side by side in one run.

Load: persistent messages of 1 KiB (``persistent:true``) on a queue (``/queue/...``: on
RabbitMQ a durable queue), a producer and a consumer on connections of their own, running
concurrently:

- ``send+receipt``: the producer sends each message with a receipt and waits for it; the
  consumer (``ack:client-individual``, ``prefetch-count:100``) ACKs each with a receipt and
  waits for it.
- ``transaction/100``: the producer sends 100 messages in a transaction and waits for the
  COMMIT's receipt; the consumer ACKs 100 in a transaction and waits for the COMMIT's
  receipt.

Baton runs as ``./platform/up`` runs it (``manage.py stomp_serve``) on a scratch SQLite
database (or ``--database-url``); RabbitMQ is Debian's ``rabbitmq-server`` with
``rabbitmq_stomp`` started on loopback in a scratch directory
(:func:`bench.rabbitmq.rabbitmq_server`). The rate is messages moved (sent and
acknowledged) per second, from the start line until the consumer's last acknowledgement.
Needs no Django in this process beyond the command.
"""

from __future__ import annotations

import json
import queue as queues
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field

from .report import BenchmarkError, body_text, raced
from tests.support.scratch import HOST, Scratch, base_dir, free_port, process_stopped

#: (scenario, messages per receipt): one per SEND with a receipt, 100 per transaction.
SCENARIOS = (("send+receipt", 1), ("transaction/100", 100))
TIMEOUT_S = 120
BROKER, QUEUE, USER = "BENCH", "BENCH.STOMP", "bench"


@dataclass
class StompResult:
    peer: str  # "Baton" | "RabbitMQ" | "engine" (Baton's engine alone, in process: bench/stomp_engine.py)
    scenario: str
    batch: int
    messages: int
    seconds: float  # of the median round
    #: Each round's rate, in the order run (the row's rate is their median).
    rounds: list[float] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.messages / self.seconds if self.seconds > 0 else 0.0

    def as_dict(self) -> dict:
        return {**asdict(self), "rate": round(self.rate, 1), "rounds": [round(r, 1) for r in self.rounds]}


def medians(results: list[StompResult]) -> list[StompResult]:
    """One row per peer and scenario: the round of median rate (the lower middle of an even
    count), with every round's rate beside it; in the order the rows first came."""
    by: dict[tuple[str, str], list[StompResult]] = {}
    for r in results:
        by.setdefault((r.peer, r.scenario), []).append(r)
    rows = []
    for same in by.values():
        ranked = sorted(same, key=lambda r: r.rate)
        middle = ranked[(len(ranked) - 1) // 2]
        rows.append(
            StompResult(
                middle.peer, middle.scenario, middle.batch, middle.messages, middle.seconds, [r.rate for r in same]
            )
        )
    return rows


@dataclass
class Target:
    peer: str
    port: int
    vhost: str
    login: str
    passcode: str
    destination: str
    describe: str
    #: The server's process id (0: not known), for what it costs (bench/stomp_footprint.py).
    pid: int = 0


class _Client:
    """A stomp.py connection with its receipts and messages to wait on."""

    def __init__(self, target: Target) -> None:
        import stomp

        self.conn = stomp.Connection12(
            [(HOST, target.port)], vhost=target.vhost, heartbeats=(0, 0), auto_content_length=True
        )
        self.cond = threading.Condition()
        self.receipts: set[str] = set()
        self.errors: list[str] = []
        self.messages: queues.SimpleQueue = queues.SimpleQueue()
        outer = self

        class Listener:
            def on_receipt(self, frame) -> None:
                with outer.cond:
                    outer.receipts.add(frame.headers["receipt-id"])
                    outer.cond.notify_all()

            def on_error(self, frame) -> None:
                with outer.cond:
                    outer.errors.append(f"{frame.headers.get('message')}: {frame.body[:300]}")
                    outer.cond.notify_all()

            def on_message(self, frame) -> None:
                outer.messages.put(frame)

        self.conn.set_listener("", Listener())
        self.conn.connect(target.login, target.passcode, wait=True)

    def receipt(self, rid: str) -> None:
        with self.cond:
            if not self.cond.wait_for(lambda: rid in self.receipts or self.errors, TIMEOUT_S):
                raise BenchmarkError(f"no receipt {rid} within {TIMEOUT_S} s")
            if self.errors:
                raise BenchmarkError(f"ERROR frame: {self.errors[0]}")
            self.receipts.discard(rid)

    def message(self):
        try:
            return self.messages.get(timeout=TIMEOUT_S)
        except queues.Empty:
            raise BenchmarkError(f"no message within {TIMEOUT_S} s") from None

    def close(self) -> None:
        try:
            self.conn.disconnect()
        except Exception:  # noqa: BLE001 - gone already
            pass


def _flow(target: Target, *, total: int, batch: int) -> float:
    body = body_text()
    producer, consumer = _Client(target), _Client(target)
    consumer.conn.subscribe(target.destination, id="bench", ack="client-individual", headers={"prefetch-count": "100"})

    def produce(ready) -> None:
        ready()
        for n in range(0, total, batch):
            if batch == 1:
                producer.conn.send(target.destination, body, headers={"persistent": "true", "receipt": f"s{n}"})
            else:
                producer.conn.begin(f"p{n}")
                for _ in range(batch):
                    producer.conn.send(target.destination, body, headers={"persistent": "true", "transaction": f"p{n}"})
                producer.conn.commit(f"p{n}", receipt=f"s{n}")
            producer.receipt(f"s{n}")

    def consume(ready) -> None:
        ready()
        for n in range(0, total, batch):
            if batch == 1:
                frame = consumer.message()
                consumer.conn.ack(frame.headers["ack"], receipt=f"a{n}")
            else:
                consumer.conn.begin(f"c{n}")
                for _ in range(batch):
                    frame = consumer.message()
                    consumer.conn.ack(frame.headers["ack"], transaction=f"c{n}")
                consumer.conn.commit(f"c{n}", receipt=f"a{n}")
            consumer.receipt(f"a{n}")

    try:
        return raced([produce, consume], what=f"{target.peer} STOMP")
    finally:
        producer.close()
        consumer.close()


def stomp_race(targets: list[Target], *, messages: int, rounds: int = 1, progress: bool = False) -> list[StompResult]:
    """Each scenario ``rounds`` times on every target, the targets taking turns within each
    round (so that a machine that slows down meanwhile slows them alike); one row per round."""
    for target in targets:
        _flow(target, total=20, batch=1)  # warm-up
    results = []
    for n in range(rounds):
        for scenario, batch in SCENARIOS:
            total = max(batch, messages // batch * batch)
            for target in targets:
                if progress:
                    print(
                        f"  round {n + 1}/{rounds}: {target.peer} STOMP {scenario}: {total} messages",
                        file=sys.stderr,
                        flush=True,
                    )
                seconds = _flow(target, total=total, batch=batch)
                results.append(StompResult(target.peer, scenario, batch, total, seconds, [total / seconds]))
    return results


def _manage(scratch: Scratch, *args: str, python: bool = False) -> str:
    """``manage.py ARGS`` on the scratch database (``python``: ``python ARGS``); its stdout."""
    done = subprocess.run(
        [sys.executable, *([] if python else [str(base_dir() / "manage.py")]), *args],
        cwd=base_dir(),
        env=scratch.env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if done.returncode != 0:
        what = "python -c MANAGE_EACH " + args[-1] if python else "manage.py " + " ".join(args)
        raise BenchmarkError(f"{what} failed: {done.stderr[-2000:]}")
    return done.stdout


def _manage_each(scratch: Scratch, *commands: list[str]) -> list[str]:
    """``manage.py`` for each of ``commands`` in turn, in one process; what each printed."""
    from tests.support.live import MANAGE_EACH

    return json.loads(_manage(scratch, "-c", MANAGE_EACH, json.dumps(list(commands)), python=True))


@contextmanager
def baton_stomp(scratch: Scratch) -> Iterator[Target]:
    """Baton's STOMP server (``manage.py stomp_serve``, as platform/up starts it) on the
    scratch database, with a broker, a queue and a user of its own."""
    # in one process, one start of Python and Django instead of four (bench/live.py: MANAGE_EACH)
    _, issued, _, _ = _manage_each(
        scratch,
        ["migrate", "--noinput", "-v0"],
        ["api_token", USER, "--create-user", "--superuser"],
        ["define_broker", BROKER, "-v0"],
        ["define_queue", BROKER, QUEUE, "-v0"],
    )
    token = [line for line in issued.splitlines() if line.strip()][-1].strip()
    port = free_port()
    with open(scratch.dir / "stomp.log", "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, str(base_dir() / "manage.py"), "stomp_serve", "--host", HOST, "--port", str(port)],
            cwd=base_dir(),
            env=scratch.env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            import socket

            deadline = time.monotonic() + 60
            while True:
                if proc.poll() is not None:
                    raise BenchmarkError(f"stomp_serve exited: {scratch.log_tail('stomp.log')}")
                try:
                    socket.create_connection((HOST, port), timeout=1).close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise BenchmarkError("stomp_serve did not listen within 60 s") from None
                    time.sleep(0.1)  # polling the port of a starting server
            yield Target(
                "Baton",
                port,
                BROKER,
                USER,
                token,
                f"/queue/{QUEUE}",
                f"manage.py stomp_serve on {HOST}:{port}, database {scratch.database_url}",
                proc.pid,
            )
        finally:
            process_stopped(proc)


@contextmanager
def rabbitmq_stomp(*, keep: bool = False) -> Iterator[Target]:
    from .rabbitmq import rabbitmq_server

    with rabbitmq_server(keep=keep, stomp=True) as (node, describe):
        port = node.stomp_port
        yield Target(
            "RabbitMQ",
            port,
            "/",
            "guest",
            "guest",
            "/queue/baton.bench.stomp",
            f"{describe}; rabbitmq_stomp on {HOST}:{port}",
        )


def table(results: list[StompResult]) -> str:
    """The rows (medians, when there were rounds) and the ratios of their rates."""
    lines = [
        f"{'peer':<10} {'scenario':<16} {'batch':>5} {'messages':>8} {'seconds':>8} {'msgs/s':>9}  each round's msgs/s"
    ]
    for r in results:
        each = ", ".join(f"{rate:.1f}" for rate in r.rounds)
        lines.append(
            f"{r.peer:<10} {r.scenario:<16} {r.batch:>5} {r.messages:>8} {r.seconds:>8.2f} {r.rate:>9.1f}  {each}"
        )
    by = {(r.peer, r.scenario): r.rate for r in results}
    ratios = [
        (f"{peer} / {other}, {s}", by[(peer, s)] / by[(other, s)])
        for peer, other in (("Baton", "RabbitMQ"), ("engine", "RabbitMQ"), ("Baton", "engine"))
        for s, _ in SCENARIOS
        if by.get((other, s)) and (peer, s) in by
    ]
    if ratios:
        lines.append("")
        lines.extend(f"{what}: {ratio:.2f}x" for what, ratio in ratios)
    return "\n".join(lines)

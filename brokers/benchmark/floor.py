"""The floor under the engine's in-process figures on SQLite (docs/performance.md, "The
floor"): how fast the fewest writes a unit of work needs can go, with no engine around
them, beside the plain baseline the ratios are taken against.

    python -m brokers.benchmark.floor [--units 400] [--rounds 5] [--directory DIR] [--baton] [--json]

In a scratch SQLite file (WAL) in ``--directory`` (default: ``var/``, the disk the
platform's database is on), alternately, ``--rounds`` times, with 1 KiB bodies:

* ``plain``: ``BEGIN IMMEDIATE``, INSERT of one row (or 100) into a table without
  secondary indexes, ``COMMIT`` at ``synchronous=FULL`` — the benchmark's plain baseline.
* ``floor``: a unit of work begun by its put, then committed, written as the fewest
  statements the engine's promises allow, through the same driver:

  - the put, a database transaction of its own (another connection's pre-emptive get must
    see the message and its unit of work before the commit), not synced (it promises
    nothing yet): INSERT of the unit of work's row; the queue's depth counter raised,
    checked against its limit; INSERT of the message(s) into a table with one index
    (queue, put order) for the gets; INSERT of the journal's begin and put events;
  - the commit, synced: the unit of work's state set to committed; INSERT of the journal's
    commit event.

  Generous to the engine: the message rows are not touched at commit (their state read
  through their unit of work's), there is no index for finding a unit of work's messages,
  no definitions check, no link, no id beyond SQLite's row ids.

* ``baton`` (with ``--baton``): the same unit of work through the engine in this process,
  as ``manage.py benchmark``'s in-process put+commit does it (``message_put`` with
  syncpoint yes, then ``transaction_commit``), on a scratch SQLite database of its own in
  the same directory, migrated first, at the platform's default durability.

* ``flow``: the queue flow's floor, one producer and one consumer thread, each with its
  own connection, each call durable as an immediate put and a final get are: the producer
  ``BEGIN IMMEDIATE``, raises the depth counter, INSERTs the message(s), a journal row,
  ``COMMIT`` (synced); the consumer, told by the producer that a batch is there (no
  polling), ``BEGIN IMMEDIATE``, ``DELETE … RETURNING`` the oldest message(s) through the
  index, lowers the counter, a journal row, ``COMMIT`` (synced). Messages per second, to
  set beside the queue flows of ``manage.py benchmark --only session --peers``.

Prints the medians over the rounds, per unit of work of 1 and of 100 messages: plain's
time, the floor's, the floor's rate over plain's (the best any engine doing these writes
could score), and the budget: the time per unit of work (and per message, at 100) that is
left at half the plain rate for everything the engine does besides these statements
(validation, look-ups, ids, wake-ups, the journal's content, its own Python). ``--json``
prints one object per batch size instead. Needs no Django, except for ``--baton``;
asserts nothing.
"""
from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

from .report import body_text

#: Messages per unit of work measured.
BATCHES = (1, 100)
#: The ratio the in-process goal asks for.
GOAL = 0.5

_SCHEMA = (
    "CREATE TABLE unit_of_work (id TEXT PRIMARY KEY, state TEXT NOT NULL)",
    "CREATE TABLE queue (id INTEGER PRIMARY KEY, depth INTEGER NOT NULL, max_depth INTEGER NOT NULL)",
    "INSERT INTO queue VALUES (1, 0, 999999999)",
    "CREATE TABLE message (id INTEGER PRIMARY KEY, queue_id INTEGER NOT NULL, unit_of_work_id TEXT,"
    " body BLOB NOT NULL)",
    "CREATE INDEX message_get ON message (queue_id, id)",
    "CREATE TABLE journal (id INTEGER PRIMARY KEY, unit_of_work_id TEXT NOT NULL, event TEXT NOT NULL,"
    " at REAL NOT NULL)",
    "CREATE TABLE plain_message (id INTEGER PRIMARY KEY, body BLOB NOT NULL)",
)


class Floor:
    """One scratch database, both kinds of unit of work on it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.conn = sqlite3.connect(path, isolation_level=None, timeout=30)  # we say BEGIN ourselves
        mode = self.conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if mode.lower() != "wal":
            raise RuntimeError(f"journal_mode={mode} (wanted WAL)")
        self.conn.execute("PRAGMA synchronous=FULL")
        for statement in _SCHEMA:
            self.conn.execute(statement)
        body = body_text().encode("ascii")
        self.rows = {batch: [(body,)] * batch for batch in BATCHES}
        self.messages = {batch: ("INSERT INTO message (queue_id, unit_of_work_id, body) VALUES "
                                 + ", ".join(["(1, ?, ?)"] * batch)) for batch in BATCHES}
        self.body = body

    def plain(self, batch: int) -> None:
        c = self.conn
        c.execute("BEGIN IMMEDIATE")
        if batch == 1:
            c.execute("INSERT INTO plain_message (body) VALUES (?)", self.rows[1][0])
        else:
            c.executemany("INSERT INTO plain_message (body) VALUES (?)", self.rows[batch])
        c.execute("COMMIT")

    def unit(self, batch: int) -> None:
        c, unit = self.conn, secrets.token_hex(12)
        now = time.time()
        c.execute("PRAGMA synchronous=NORMAL")  # the put promises nothing: not synced
        c.execute("BEGIN IMMEDIATE")
        c.execute("INSERT INTO unit_of_work (id, state) VALUES (?, 'open')", (unit,))
        if c.execute("UPDATE queue SET depth = depth + ? WHERE id = 1 AND depth + ? <= max_depth RETURNING depth",
                     (batch, batch)).fetchone() is None:
            raise RuntimeError("queue full")
        c.execute(self.messages[batch], [value for _ in range(batch) for value in (unit, self.body)])
        c.execute("INSERT INTO journal (unit_of_work_id, event, at) VALUES (?, 'begin', ?), (?, 'put', ?)",
                  (unit, now, unit, now))
        c.execute("COMMIT")
        c.execute("PRAGMA synchronous=FULL")  # the commit's reply says committed: synced
        c.execute("BEGIN IMMEDIATE")
        c.execute("UPDATE unit_of_work SET state = 'committed' WHERE id = ? AND state = 'open'", (unit,))
        c.execute("INSERT INTO journal (unit_of_work_id, event, at) VALUES (?, 'commit', ?)", (unit, now))
        c.execute("COMMIT")

    def close(self) -> None:
        self.conn.close()
        for suffix in ("", "-wal", "-shm"):
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)


def flow_rate(path: Path, *, batch: int, units: int) -> float:
    """The queue flow's floor (module docstring): messages per second moved by one producer
    and one consumer thread, ``units`` calls each of ``batch`` messages."""
    floor = Floor(path)  # the schema
    floor.conn.close()
    insert = floor.messages[batch].replace("unit_of_work_id, ", "").replace("(1, ?, ?)", "(1, ?)")
    ready = threading.Semaphore(0)
    got: list[int] = []
    errors: list[BaseException] = []

    def connect() -> sqlite3.Connection:
        conn = sqlite3.connect(path, isolation_level=None, timeout=30, check_same_thread=False)
        conn.execute("PRAGMA synchronous=FULL")
        return conn

    def producer(conn: sqlite3.Connection) -> None:
        for _ in range(units):
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("UPDATE queue SET depth = depth + ? WHERE id = 1 AND depth + ? <= max_depth RETURNING depth",
                         (batch, batch)).fetchone()
            conn.execute(insert, [floor.body] * batch)
            conn.execute("INSERT INTO journal (unit_of_work_id, event, at) VALUES ('', 'put', ?)", (time.time(),))
            conn.execute("COMMIT")
            ready.release()

    def consumer(conn: sqlite3.Connection) -> None:
        for _ in range(units):
            ready.acquire()
            conn.execute("BEGIN IMMEDIATE")
            rows = conn.execute("DELETE FROM message WHERE id IN (SELECT id FROM message WHERE queue_id = 1"
                                " ORDER BY id LIMIT ?) RETURNING body", (batch,)).fetchall()
            conn.execute("UPDATE queue SET depth = depth - ? WHERE id = 1", (len(rows),))
            conn.execute("INSERT INTO journal (unit_of_work_id, event, at) VALUES ('', 'get', ?)", (time.time(),))
            conn.execute("COMMIT")
            got.append(len(rows))

    def guarded(side, conn):
        def target() -> None:
            try:
                side(conn)
            except BaseException as exc:  # reported below; the other side is released
                errors.append(exc)
                ready.release()
        return threading.Thread(target=target)

    connections = [connect(), connect()]
    try:
        threads = [guarded(producer, connections[0]), guarded(consumer, connections[1])]
        start = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        seconds = time.perf_counter() - start
    finally:
        for conn in connections:
            conn.close()
        floor.close()
    if errors:
        raise errors[0]
    if sum(got) != batch * units:
        raise RuntimeError(f"flow: got {sum(got)} of {batch * units} messages")
    return batch * units / seconds


def _seconds_per_unit(step, batch: int, units: int) -> float:
    for _ in range(3):  # warm up: the first pages, the first sync
        step(batch)
    start = time.perf_counter()
    for _ in range(units):
        step(batch)
    return (time.perf_counter() - start) / units


class Engine:
    """Baton's engine in this process on a scratch SQLite database (``--baton``)."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="baton-floor-engine-", dir=directory))
        os.environ.update(DATABASE_URL=f"sqlite:///{self.directory / 'baton.sqlite3'}",
                          BATON_VAR_DIR=str(self.directory), DJANGO_SETTINGS_MODULE="config.settings")
        import django

        django.setup()
        from django.core.management import call_command

        from brokers.models import Persistence
        from brokers.services.brokers import broker_define
        from brokers.services.message_input import MessageInput
        from brokers.services.messages import message_put
        from brokers.services.queues import queue_define
        from transactions.manager import transaction_commit

        call_command("migrate", interactive=False, verbosity=0)
        broker_define(name="FLOOR", description="python -m brokers.benchmark.floor --baton")
        queue_define(broker="FLOOR", name="Q", max_depth=999_999_999, default_persistence=Persistence.PERSISTENT)
        body = body_text().encode("ascii")

        def unit(batch: int) -> None:
            inputs = [MessageInput(body=body, persistence=Persistence.PERSISTENT) for _ in range(batch)]
            put = message_put(broker="FLOOR", queue="Q", messages=inputs, syncpoint="yes")
            transaction_commit(transaction_id=put.transaction_id)

        self.unit = unit

    def close(self) -> None:
        from django.db import connections

        connections.close_all()
        shutil.rmtree(self.directory, ignore_errors=True)


def run(*, directory: Path, units: int, rounds: int, baton: bool = False) -> list[dict]:
    """Medians over ``rounds`` alternating rounds; ``units`` units of work of one message
    per round, a tenth as many of 100."""
    floor = Floor(Path(tempfile.mkstemp(prefix="baton-floor-", suffix=".sqlite3", dir=directory)[1]))
    engine = Engine(directory) if baton else None
    try:
        steps = [("plain", floor.plain), ("floor", floor.unit)] + ([("baton", engine.unit)] if engine else [])
        times: dict[tuple[str, int], list[float]] = {}
        flows: dict[int, list[float]] = {}
        for _ in range(rounds):
            for batch in BATCHES:
                count = units if batch == 1 else max(1, units // 10)
                for kind, step in steps:
                    times.setdefault((kind, batch), []).append(_seconds_per_unit(step, batch, count))
                path = Path(tempfile.mkstemp(prefix="baton-floor-flow-", suffix=".sqlite3", dir=directory)[1])
                path.unlink()
                flows.setdefault(batch, []).append(flow_rate(path, batch=batch, units=count * 5))
    finally:
        floor.close()
        if engine:
            engine.close()
    results = []
    for batch in BATCHES:
        plain, least = statistics.median(times["plain", batch]), statistics.median(times["floor", batch])
        budget = plain / GOAL - least
        result = {
            "batch": batch, "rounds": rounds, "units": units if batch == 1 else max(1, units // 10),
            "plain_ms": plain * 1000, "floor_ms": least * 1000, "floor_ratio": plain / least,
            "budget_ms_per_unit": budget * 1000, "budget_us_per_message": budget / batch * 1e6,
            "flow_msgs_per_s": statistics.median(flows[batch]),
        }
        if baton:
            engine_s = statistics.median(times["baton", batch])
            result.update(baton_ms=engine_s * 1000, baton_ratio=plain / engine_s,
                          beyond_floor_us_per_message=(engine_s - least) / batch * 1e6)
        results.append(result)
    return results


def table(results: list[dict]) -> str:
    baton = "baton_ms" in results[0]
    lines = [f"{'batch':>5}  {'plain ms':>9}  {'floor ms':>9}  {'floor/plain':>11}  "
             f"{'budget at 0.5x ms':>17}  {'per message us':>14}"
             + (f"  {'Baton ms':>9}  {'Baton/plain':>11}  {'beyond floor us/msg':>19}" if baton else "")
             + f"  {'flow 1+1 msgs/s':>15}"]
    for r in results:
        lines.append(f"{r['batch']:>5}  {r['plain_ms']:>9.3f}  {r['floor_ms']:>9.3f}  {r['floor_ratio']:>10.2f}x  "
                     f"{r['budget_ms_per_unit']:>17.3f}  {r['budget_us_per_message']:>14.1f}"
                     + (f"  {r['baton_ms']:>9.3f}  {r['baton_ratio']:>10.2f}x  {r['beyond_floor_us_per_message']:>19.1f}"
                        if baton else "")
                     + f"  {r['flow_msgs_per_s']:>15.0f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--units", type=int, default=400, help="units of work of one message per round (400); "
                                                                "a tenth as many of 100")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds; medians are printed (5)")
    parser.add_argument("--directory", type=Path, default=Path(__file__).resolve().parents[2] / "var",
                        help="where the scratch file goes (default: var/, beside the platform's database)")
    parser.add_argument("--baton", action="store_true", help="also Baton's engine in this process (needs Django)")
    parser.add_argument("--json", action="store_true", help="one JSON object per batch size")
    args = parser.parse_args(argv)
    if args.units < 1 or args.rounds < 1:
        parser.error("--units and --rounds must be at least 1")
    if not args.directory.is_dir():
        parser.error(f"--directory {args.directory}: no such directory")
    load = [round(x, 2) for x in os.getloadavg()]
    results = run(directory=args.directory, units=args.units, rounds=args.rounds, baton=args.baton)
    load_after = [round(x, 2) for x in os.getloadavg()]
    if args.json:
        for r in results:
            print(json.dumps({"scenario": "floor", **r, "sqlite_version": sqlite3.sqlite_version,
                              "load_before": load, "load_after": load_after}))
    else:
        print(f"SQLite {sqlite3.sqlite_version}, {args.directory}, load {load} -> {load_after}")
        print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The floor under the engine's in-process figures on SQLite (docs/performance.md, "The
floor"): how fast the fewest writes a unit of work needs can go, with no engine around
them, beside the plain baseline the ratios are taken against.

    python -m bench.floor [--units 400] [--rounds 5] [--directory DIR] [--baton] [--json]

In a scratch SQLite file (WAL) in ``--directory`` (default: ``var/``, the disk the
platform's database is on), with 1 KiB bodies, after a warm-up that grows the WAL to its
working size (a fresh, growing WAL syncs slower), alternately ``--rounds`` times:

* ``plain``: ``BEGIN IMMEDIATE``, INSERT of one row (or 100) into a table without
  secondary indexes, ``COMMIT`` at ``synchronous=FULL`` — the benchmark's plain baseline.
* ``floor``: units of work written as the fewest statements the engine's promises allow,
  through the same driver. Each operation is a database transaction of its own, because
  another connection must see it before the commit (a pre-emptive get sees an uncommitted
  put); it is not synced, since it promises nothing yet. The commit is synced.

  - put+commit: the put inserts the unit of work's row, raises the queue's depth counter
    against its limit, inserts the message(s) into a table with one index (queue, put
    order) for the gets, and writes the journal's begin and put events; the commit sets the
    unit of work's state and writes the journal's commit event.
  - get+commit: the get inserts the unit of work's row, takes the oldest message(s) whose
    put is committed by inserting a small row per message into a table of taken messages
    (so that the 1 KiB message row is not rewritten), reads their bodies, and writes the
    journal's begin and get events; the commit sets the unit of work's state, deletes the
    message(s) and their taken rows, lowers the depth counter and writes the journal's
    commit event.

  Generous to the engine: a message row is not touched when its put commits (visibility
  comes from its unit of work's state), there is no index for finding a unit of work's
  messages (the get's commit deletes the row ids its get returned), no definitions check,
  no link, no ids beyond SQLite's row ids.
* ``baton`` (with ``--baton``): the same units of work through the engine in this process,
  as ``manage.py benchmark``'s in-process put+commit and get+commit do them (``message_put``
  or ``message_get`` with syncpoint yes, then ``transaction_commit``), on a scratch SQLite
  database of its own in the same directory, migrated first, at the platform's default
  durability. After the rounds, one pass more with each of the engine's calls into SQLite
  (the driver's ``execute``, ``fetch*``, ``commit``) and ``os.fdatasync`` timed
  (``sys.setprofile``): ``in SQLite`` is the part of a unit of work spent there, its
  statements' and commits' own work and the WAL's sync, and ``floor/in SQLite`` the ratio
  to the floor the engine would reach if its own Python took no time at all: what its schema
  and statements allow.
* ``flow``: the queue flow's floor, one producer and one consumer thread, each with its
  own connection, each call durable as an immediate put and a final get are: the producer
  raises the depth counter, INSERTs the message(s) and a journal row and commits (synced);
  the consumer, told by the producer that a batch is there (no polling), ``DELETE …
  RETURNING``s the oldest message(s) through the index, lowers the counter, writes a
  journal row and commits (synced). Messages per second, to set beside the queue flows of
  ``manage.py benchmark --only session --peers``.

Prints the medians over the rounds, per unit of work of 1 and of 100 messages: plain's
time, the floor's, the floor's rate over plain's (the best any engine doing these writes
could score), and the budget: the time per unit of work (and per message, at 100) that is
left at half the plain rate for everything the engine does besides these statements
(validation, look-ups, ids, wake-ups, the journal's content, its own Python) — negative
when the statements alone are slower than that. ``--json`` prints one object per line
instead. Needs no Django, except for ``--baton``; asserts nothing.
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
OPERATIONS = ("put+commit", "get+commit")
#: The ratio the in-process goal asks for.
GOAL = 0.5
#: Units of work of one message the warm-up runs: enough WAL frames for a checkpoint, after
#: which the WAL file is reused at its size instead of growing.
WARMUP_UNITS = 200

_SCHEMA = (
    "CREATE TABLE unit_of_work (id TEXT PRIMARY KEY, state TEXT NOT NULL) WITHOUT ROWID",
    "CREATE TABLE queue (id INTEGER PRIMARY KEY, depth INTEGER NOT NULL, max_depth INTEGER NOT NULL)",
    "INSERT INTO queue VALUES (1, 0, 999999999)",
    (
        "CREATE TABLE message (id INTEGER PRIMARY KEY, queue_id INTEGER NOT NULL, unit_of_work_id TEXT,"
        " body BLOB NOT NULL)"
    ),
    "CREATE INDEX message_get ON message (queue_id, id)",
    # messages gotten under a unit of work not yet committed: a small row each, so that a
    # get does not rewrite the (1 KiB) message row
    "CREATE TABLE taken (message_id INTEGER PRIMARY KEY, unit_of_work_id TEXT NOT NULL)",
    (
        "CREATE TABLE journal (id INTEGER PRIMARY KEY, unit_of_work_id TEXT NOT NULL, event TEXT NOT NULL,"
        " at REAL NOT NULL)"
    ),
    "CREATE TABLE plain_message (id INTEGER PRIMARY KEY, body BLOB NOT NULL)",
)
_JOURNAL = "INSERT INTO journal (unit_of_work_id, event, at) VALUES "


class Floor:
    """One scratch database; the plain baseline's and the floor's units of work on it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.conn = sqlite3.connect(path, isolation_level=None, timeout=30, check_same_thread=False)
        mode = self.conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if mode.lower() != "wal":
            raise RuntimeError(f"journal_mode={mode} (wanted WAL)")
        self.conn.execute("PRAGMA synchronous=FULL")
        for statement in _SCHEMA:
            self.conn.execute(statement)
        self.body = body_text().encode("ascii")
        self.rows = {batch: [(self.body,)] * batch for batch in BATCHES}
        self.inserts = {
            batch: ("INSERT INTO message (queue_id, unit_of_work_id, body) VALUES " + ", ".join(["(1, ?, ?)"] * batch))
            for batch in BATCHES
        }

    def plain(self, batch: int) -> None:
        c = self.conn
        c.execute("BEGIN IMMEDIATE")
        if batch == 1:
            c.execute("INSERT INTO plain_message (body) VALUES (?)", self.rows[1][0])
        else:
            c.executemany("INSERT INTO plain_message (body) VALUES (?)", self.rows[batch])
        c.execute("COMMIT")

    def _operation(self, unit: str) -> sqlite3.Connection:
        """An operation's database transaction begins: not synced at its commit."""
        c = self.conn
        c.execute("PRAGMA synchronous=NORMAL")
        c.execute("BEGIN IMMEDIATE")
        c.execute("INSERT INTO unit_of_work (id, state) VALUES (?, 'open')", (unit,))
        return c

    def _commit(self, unit: str, now: float) -> sqlite3.Connection:
        """The commit's database transaction begins: synced at its commit."""
        c = self.conn
        c.execute("PRAGMA synchronous=FULL")
        c.execute("BEGIN IMMEDIATE")
        c.execute("UPDATE unit_of_work SET state = 'committed' WHERE id = ? AND state = 'open'", (unit,))
        c.execute(_JOURNAL + "(?, 'commit', ?)", (unit, now))
        return c

    def put(self, unit: str, batch: int, now: float) -> None:
        """The put that begins ``unit``: its own database transaction, not synced."""
        c = self._operation(unit)
        if (
            c.execute(
                "UPDATE queue SET depth = depth + ? WHERE id = 1 AND depth + ? <= max_depth RETURNING depth",
                (batch, batch),
            ).fetchone()
            is None
        ):
            raise RuntimeError("queue full")
        c.execute(self.inserts[batch], [value for _ in range(batch) for value in (unit, self.body)])
        c.execute(_JOURNAL + "(?, 'begin', ?), (?, 'put', ?)", (unit, now, unit, now))
        c.execute("COMMIT")

    def commit(self, unit: str, now: float) -> None:
        """The commit of a unit of work of puts: synced."""
        self._commit(unit, now).execute("COMMIT")

    def put_commit(self, batch: int) -> None:
        unit, now = secrets.token_hex(12), time.time()
        self.put(unit, batch, now)
        self.commit(unit, now)

    def get_commit(self, batch: int) -> None:
        unit, now = secrets.token_hex(12), time.time()
        c = self._operation(unit)
        ids = [
            row[0]
            for row in c.execute(
                "INSERT INTO taken (message_id, unit_of_work_id) SELECT m.id, ? FROM message m"
                " JOIN unit_of_work w ON w.id = m.unit_of_work_id WHERE m.queue_id = 1 AND w.state = 'committed'"
                " AND NOT EXISTS (SELECT 1 FROM taken t WHERE t.message_id = m.id) ORDER BY m.id LIMIT ?"
                " RETURNING message_id",
                (unit, batch),
            ).fetchall()
        ]
        if len(ids) != batch:
            raise RuntimeError(f"get: {len(ids)} messages of {batch}")
        marks = ", ".join(["?"] * batch)
        c.execute(f"SELECT id, body FROM message WHERE id IN ({marks})", ids).fetchall()
        c.execute(_JOURNAL + "(?, 'begin', ?), (?, 'get', ?)", (unit, now, unit, now))
        c.execute("COMMIT")
        c = self._commit(unit, now)
        c.execute(f"DELETE FROM message WHERE id IN ({marks})", ids)
        c.execute(f"DELETE FROM taken WHERE message_id IN ({marks})", ids)
        c.execute("UPDATE queue SET depth = depth - ? WHERE id = 1", (batch,))
        c.execute("COMMIT")

    def close(self) -> None:
        self.conn.close()
        for suffix in ("", "-wal", "-shm"):
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)


class Engine:
    """Baton's engine in this process on a scratch SQLite database (``--baton``)."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="baton-floor-engine-", dir=directory))
        os.environ.update(
            DATABASE_URL=f"sqlite:///{self.directory / 'baton.sqlite3'}",
            BATON_VAR_DIR=str(self.directory),
            DJANGO_SETTINGS_MODULE="config.settings",
        )
        import django

        django.setup()
        from django.core.management import call_command

        from brokers.models import Persistence
        from brokers.services.brokers import broker_define
        from brokers.services.message_input import MessageInput
        from brokers.services.messages import message_get, message_put
        from brokers.services.queues import queue_define
        from transactions.manager import transaction_commit

        call_command("migrate", interactive=False, verbosity=0)
        broker_define(name="FLOOR", description="python -m bench.floor --baton")
        queue_define(broker="FLOOR", name="Q", max_depth=999_999_999, default_persistence=Persistence.PERSISTENT)
        body = body_text().encode("ascii")

        def put_commit(batch: int) -> None:
            inputs = [MessageInput(body=body, persistence=Persistence.PERSISTENT) for _ in range(batch)]
            put = message_put(broker="FLOOR", queue="Q", messages=inputs, syncpoint="yes")
            transaction_commit(transaction_id=put.transaction_id)

        def get_commit(batch: int) -> None:
            got = message_get(broker="FLOOR", queue="Q", syncpoint="yes", batch=batch)
            if len(got.messages) != batch:
                raise RuntimeError(f"get: {len(got.messages)} messages of {batch}")
            transaction_commit(transaction_id=got.transaction_id)

        self.put_commit, self.get_commit = put_commit, get_commit

    def close(self) -> None:
        from django.db import connections

        connections.close_all()
        shutil.rmtree(self.directory, ignore_errors=True)


def flow_rate(path: Path, *, batch: int, calls: int) -> float:
    """The queue flow's floor (module docstring): messages per second moved by one producer
    and one consumer thread, ``calls`` calls each of ``batch`` messages."""
    Floor(path).conn.close()  # the schema
    insert = "INSERT INTO message (queue_id, body) VALUES " + ", ".join(["(1, ?)"] * batch)
    body = body_text().encode("ascii")
    ready = threading.Semaphore(0)
    got: list[int] = []
    errors: list[BaseException] = []

    def producer(conn: sqlite3.Connection) -> None:
        for _ in range(calls):
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(
                "UPDATE queue SET depth = depth + ? WHERE id = 1 AND depth + ? <= max_depth RETURNING depth",
                (batch, batch),
            ).fetchone()
            conn.execute(insert, [body] * batch)
            conn.execute(_JOURNAL + "('', 'put', ?)", (time.time(),))
            conn.execute("COMMIT")
            ready.release()

    def consumer(conn: sqlite3.Connection) -> None:
        for _ in range(calls):
            ready.acquire()
            conn.execute("BEGIN IMMEDIATE")
            rows = conn.execute(
                "DELETE FROM message WHERE id IN (SELECT id FROM message WHERE queue_id = 1"
                " ORDER BY id LIMIT ?) RETURNING body",
                (batch,),
            ).fetchall()
            conn.execute("UPDATE queue SET depth = depth - ? WHERE id = 1", (len(rows),))
            conn.execute(_JOURNAL + "('', 'get', ?)", (time.time(),))
            conn.execute("COMMIT")
            got.append(len(rows))

    def thread(side, conn: sqlite3.Connection) -> threading.Thread:
        def target() -> None:
            try:
                side(conn)
            except BaseException as exc:  # reported below; the consumer is released
                errors.append(exc)
                ready.release()

        return threading.Thread(target=target)

    connections = []
    try:
        for _ in range(2):
            connections.append(sqlite3.connect(path, isolation_level=None, timeout=30, check_same_thread=False))
            connections[-1].execute("PRAGMA synchronous=FULL")
        threads = [thread(producer, connections[0]), thread(consumer, connections[1])]
        start = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        seconds = time.perf_counter() - start
    finally:
        for conn in connections:
            conn.close()
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
    if errors:
        raise errors[0]
    if sum(got) != batch * calls:
        raise RuntimeError(f"flow: got {sum(got)} of {batch * calls} messages")
    return batch * calls / seconds


def _in_sqlite_per_unit(step, batch: int, units: int) -> float:
    """Seconds per unit of work spent inside SQLite's calls (the driver's ``execute``,
    ``fetch*`` and ``commit``, each statement's and commit's own work) and ``os.fdatasync``
    (the WAL's sync): the engine's calls timed one by one (``sys.setprofile`` sees C calls)
    while ``step`` runs ``units`` times. What is left of the unit's time is the engine's own
    Python."""
    inside = [0.0]
    started = [0.0]
    sync = os.fdatasync

    def driver_call(fn) -> bool:
        owner = getattr(fn, "__objclass__", None) or type(getattr(fn, "__self__", None))
        return fn is sync or (isinstance(owner, type) and issubclass(owner, (sqlite3.Connection, sqlite3.Cursor)))

    def profile(frame, event, arg) -> None:
        if event == "c_call":
            if driver_call(arg):
                started[0] = time.perf_counter()
        elif event in ("c_return", "c_exception") and started[0]:
            inside[0] += time.perf_counter() - started[0]
            started[0] = 0.0

    sys.setprofile(profile)
    try:
        for _ in range(units):
            step(batch)
    finally:
        sys.setprofile(None)
    return inside[0] / units


def _seconds_per_unit(step, batch: int, units: int) -> float:
    start = time.perf_counter()
    for _ in range(units):
        step(batch)
    return (time.perf_counter() - start) / units


def run(*, directory: Path, units: int, rounds: int, baton: bool = False) -> tuple[list[dict], list[dict]]:
    """Medians over ``rounds`` alternating rounds; ``units`` units of work of one message
    per round, a tenth as many of 100. Returns the unit-of-work results and the flow's."""
    floor = Floor(Path(tempfile.mkstemp(prefix="baton-floor-", suffix=".sqlite3", dir=directory)[1]))
    engine = Engine(directory) if baton else None
    try:
        sides = {"floor": floor} | ({"baton": engine} if engine else {})
        for side in sides.values():  # warm up: the WAL at its working size, first pages, caches
            for _ in range(WARMUP_UNITS):
                side.put_commit(1)
            for _ in range(WARMUP_UNITS):
                side.get_commit(1)
        for _ in range(WARMUP_UNITS):
            floor.plain(1)
        times: dict[tuple, list[float]] = {}
        flows: dict[int, list[float]] = {}
        for _ in range(rounds):
            for batch in BATCHES:
                count = units if batch == 1 else max(1, units // 10)
                times.setdefault(("plain", batch), []).append(_seconds_per_unit(floor.plain, batch, count))
                for name, side in sides.items():  # the puts first: the gets take what they put
                    times.setdefault((name, "put+commit", batch), []).append(
                        _seconds_per_unit(side.put_commit, batch, count)
                    )
                    times.setdefault((name, "get+commit", batch), []).append(
                        _seconds_per_unit(side.get_commit, batch, count)
                    )
                path = Path(tempfile.mkstemp(prefix="baton-floor-flow-", suffix=".sqlite3", dir=directory)[1])
                path.unlink()
                flows.setdefault(batch, []).append(flow_rate(path, batch=batch, calls=count * 5))
        if engine:  # one pass more, each of the engine's SQLite calls timed (module docstring)
            for batch in BATCHES:
                count = units if batch == 1 else max(1, units // 10)
                times["in sqlite", "put+commit", batch] = [_in_sqlite_per_unit(engine.put_commit, batch, count)]
                times["in sqlite", "get+commit", batch] = [_in_sqlite_per_unit(engine.get_commit, batch, count)]
    finally:
        floor.close()
        if engine:
            engine.close()
    results = []
    for operation in OPERATIONS:
        for batch in BATCHES:
            plain = statistics.median(times["plain", batch])
            least = statistics.median(times["floor", operation, batch])
            budget = plain / GOAL - least
            result = {
                "scenario": "floor",
                "operation": operation,
                "batch": batch,
                "rounds": rounds,
                "units": units if batch == 1 else max(1, units // 10),
                "plain_ms": plain * 1000,
                "floor_ms": least * 1000,
                "floor_ratio": plain / least,
                "budget_ms_per_unit": budget * 1000,
                "budget_us_per_message": budget / batch * 1e6,
            }
            if engine:
                engine_s = statistics.median(times["baton", operation, batch])
                in_sqlite = times["in sqlite", operation, batch][0]
                result.update(
                    baton_ms=engine_s * 1000,
                    baton_ratio=plain / engine_s,
                    beyond_floor_us_per_message=(engine_s - least) / batch * 1e6,
                    baton_in_sqlite_ms=in_sqlite * 1000,
                    floor_over_baton=least / engine_s,
                    floor_over_baton_in_sqlite=least / in_sqlite,
                )
            results.append(result)
    flow = [
        {"scenario": "flow floor", "batch": batch, "rounds": rounds, "msgs_per_s": statistics.median(flows[batch])}
        for batch in BATCHES
    ]
    return results, flow


def table(results: list[dict], flow: list[dict]) -> str:
    baton = "baton_ms" in results[0]
    lines = [
        f"{'operation':<10}  {'batch':>5}  {'plain ms':>8}  {'floor ms':>8}  {'floor/plain':>11}  "
        f"{'budget at 0.5x ms':>17}  {'per message us':>14}"
        + (
            f"  {'Baton ms':>8}  {'Baton/plain':>11}  {'beyond floor us/msg':>19}  {'in SQLite ms':>12}"
            f"  {'floor/Baton':>11}  {'floor/in SQLite':>15}"
            if baton
            else ""
        )
    ]
    for r in results:
        lines.append(
            f"{r['operation']:<10}  {r['batch']:>5}  {r['plain_ms']:>8.3f}  {r['floor_ms']:>8.3f}  "
            f"{r['floor_ratio']:>10.2f}x  {r['budget_ms_per_unit']:>17.3f}  {r['budget_us_per_message']:>14.1f}"
            + (
                f"  {r['baton_ms']:>8.3f}  {r['baton_ratio']:>10.2f}x  {r['beyond_floor_us_per_message']:>19.1f}"
                f"  {r['baton_in_sqlite_ms']:>12.3f}  {r['floor_over_baton']:>10.2f}x"
                f"  {r['floor_over_baton_in_sqlite']:>14.2f}x"
                if baton
                else ""
            )
        )
    lines.append("")
    lines.append(
        "queue flow floor, 1 producer + 1 consumer: "
        + ", ".join(f"{f['msgs_per_s']:.0f} msgs/s at {f['batch']} per call" for f in flow)
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--units", type=int, default=400, help="units of work of one message per round (400); a tenth as many of 100"
    )
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds; medians are printed (5)")
    parser.add_argument(
        "--directory",
        type=Path,
        default=Path(__file__).resolve().parents[1] / "var",
        help="where the scratch files go (default: var/, beside the platform's database)",
    )
    parser.add_argument("--baton", action="store_true", help="also Baton's engine in this process (needs Django)")
    parser.add_argument("--json", action="store_true", help="one JSON object per line")
    args = parser.parse_args(argv)
    if args.units < 1 or args.rounds < 1:
        parser.error("--units and --rounds must be at least 1")
    if not args.directory.is_dir():
        parser.error(f"--directory {args.directory}: no such directory")
    load = [round(x, 2) for x in os.getloadavg()]
    results, flow = run(directory=args.directory, units=args.units, rounds=args.rounds, baton=args.baton)
    load_after = [round(x, 2) for x in os.getloadavg()]
    if args.json:
        for r in results + flow:
            print(
                json.dumps(
                    {**r, "sqlite_version": sqlite3.sqlite_version, "load_before": load, "load_after": load_after}
                )
            )
    else:
        print(f"SQLite {sqlite3.sqlite_version}, {args.directory}, load {load} -> {load_after}")
        print(table(results, flow))
    return 0


if __name__ == "__main__":
    sys.exit(main())

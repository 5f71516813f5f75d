"""What one unit of work costs the database, counted rather than timed: WAL written, database
transactions, statements and (PostgreSQL) network round trips per step.

    python -m bench.writes [--units 200] [--json] [--directory DIR]
    DATABASE_URL=postgres://... python -m bench.writes [--units 200] [--json]

Counts do not move with the machine's load, so unlike timings they can be taken on a busy
machine and compared across commits exactly. The engine runs in this process, as the floor
tool's ``--baton`` does (``message_put`` / ``message_get`` with syncpoint yes, then
``transaction_commit``), on 1 KiB persistent messages, in units of work of 1 and of 100
messages. Per step (the put or get that begins a unit of work, and its commit) it reports:

* ``wal_pages``: on SQLite, WAL frames appended (automatic checkpoints are turned off for
  the run, so the WAL only grows: its size over the frame size is the count); on
  PostgreSQL, WAL bytes (``pg_current_wal_insert_lsn`` before and after) over the 8 KiB
  page size. Other work on the same PostgreSQL server during the run adds to the count.
* ``transactions``: database transactions committed (``COMMIT`` statements the engine sent).
* ``statements``: SQL statements the engine sent (SQLite's trace callback; on PostgreSQL
  the statements in the protocol trace, several in one simple query counting as one each).
* ``round_trips``: on PostgreSQL, requests that wait for the server (a simple ``Query`` or
  a ``Sync`` of the extended protocol, from libpq's trace); on SQLite, the statements.

Without ``DATABASE_URL`` the run uses a scratch SQLite database in ``--directory`` (default
``var/``) that is deleted afterwards; with a PostgreSQL ``DATABASE_URL`` it creates and drops
a scratch database on that server. The engine's target (issue "Engine v2") is at most 8 WAL
pages for put+commit+get+commit of one 1 KiB message and one round trip per operation on
PostgreSQL. ``--floor`` adds the WAL pages of the floor tool's units of work and of the
plain baseline, counted the same way (SQLite). Asserts nothing; prints a table, or one JSON object
per line with ``--json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from .report import body_text

SQLITE_FRAME_HEADER = 24
SQLITE_WAL_HEADER = 32
POSTGRES_PAGE = 8192
STEPS = ("put", "put commit", "get", "get commit")


@dataclass
class StepCount:
    step: str
    batch: int
    units: int
    wal_pages: float
    transactions: float
    statements: float
    round_trips: float

    def row(self) -> str:
        return (
            f"{self.step:<12} {self.batch:>5} {self.units:>6} {self.wal_pages:>10.1f} {self.transactions:>13.2f}"
            f" {self.statements:>11.1f} {self.round_trips:>12.1f}"
        )


HEADER = (
    f"{'step':<12} {'batch':>5} {'units':>6} {'WAL pages':>10} {'transactions':>13}"
    f" {'statements':>11} {'round trips':>12}"
)


class _SQLiteCounter:
    """WAL frames and statements on the engine's SQLite connection."""

    def __init__(self, db) -> None:
        self.db = db
        db.ensure_connection()
        raw = db.connection
        raw.execute("PRAGMA wal_autocheckpoint=0")
        self.page_size = raw.execute("PRAGMA page_size").fetchone()[0]
        self.wal = Path(f"{db.settings_dict['NAME']}-wal")
        self.statements: list[str] = []
        raw.set_trace_callback(self.statements.append)

    def reset(self) -> None:
        self.db.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        self.statements.clear()

    def read(self) -> tuple[float, int, int, int]:
        size = self.wal.stat().st_size if self.wal.exists() else 0
        frames = max(0, size - SQLITE_WAL_HEADER) / (self.page_size + SQLITE_FRAME_HEADER)
        commits = sum(1 for s in self.statements if s.strip().upper().startswith(("COMMIT", "END")))
        statements = sum(1 for s in self.statements if not s.strip().upper().startswith("PRAGMA"))
        return frames, commits, statements, statements

    def close(self) -> None:
        if self.db.connection is not None:
            self.db.connection.set_trace_callback(None)


class _PostgresCounter:
    """WAL bytes from the server; transactions, statements and round trips from libpq's trace
    of the engine's connection (the messages the client sent)."""

    def __init__(self, db, monitor_url: str) -> None:
        import psycopg

        self.db = db
        self.monitor = psycopg.connect(monitor_url, autocommit=True)
        self.trace = None
        self.start_lsn = None

    def _lsn(self) -> str:
        return self.monitor.execute("SELECT pg_current_wal_insert_lsn()").fetchone()[0]

    def reset(self) -> None:
        self.db.ensure_connection()
        self.trace = tempfile.NamedTemporaryFile(prefix="baton-writes-trace-", suffix=".log", delete=False)
        self.db.connection.pgconn.trace(self.trace.fileno())
        self.start_lsn = self._lsn()

    def read(self) -> tuple[float, int, int, int]:
        wal = self.monitor.execute("SELECT pg_wal_lsn_diff(%s, %s)", (self._lsn(), self.start_lsn)).fetchone()[0]
        self.db.connection.pgconn.untrace()  # flushes libpq's buffered trace
        with open(self.trace.name, errors="replace") as f:
            # a line: timestamp, direction (F: from the client), length, message type, contents
            kinds = [
                (parts[3], "\t".join(parts[4:]))
                for parts in (line.rstrip("\n").split("\t") for line in f)
                if len(parts) > 3 and parts[1] == "F"
            ]
        self.trace.close()
        if os.environ.get("BATON_WRITES_KEEP_TRACE"):
            print(f"trace kept: {self.trace.name}", file=sys.stderr)
        else:
            os.unlink(self.trace.name)
        round_trips = sum(1 for kind, _ in kinds if kind in ("Query", "Sync"))
        commits = statements = 0
        for kind, text in kinds:
            if kind == "Parse":
                statements += 1
            elif kind == "Query":  # a simple query may carry several statements (client-side binding)
                parts = [part.strip(' "') for part in text.split("; ")]
                statements += sum(1 for part in parts if part)
                commits += sum(1 for part in parts if part.upper() in ("COMMIT", "END"))
        return float(wal) / POSTGRES_PAGE, commits, statements, round_trips

    def close(self) -> None:
        self.monitor.close()


def run(*, units: int, directory: Path) -> list[StepCount]:
    url = os.environ.get("DATABASE_URL", "")
    postgres = url.startswith(("postgres://", "postgresql://"))
    scratch = Path(tempfile.mkdtemp(prefix="baton-writes-", dir=directory))
    database = f"baton_writes_{os.getpid()}"
    admin = None
    try:
        if postgres:
            import psycopg

            admin = psycopg.connect(url, autocommit=True)
            admin.execute(f'CREATE DATABASE "{database}"')
            engine_url = url.rsplit("/", 1)[0] + f"/{database}"
        else:
            engine_url = f"sqlite:///{scratch / 'baton.sqlite3'}"
        os.environ.update(DATABASE_URL=engine_url, BATON_VAR_DIR=str(scratch), DJANGO_SETTINGS_MODULE="config.settings")
        import django

        django.setup()
        from django.core.management import call_command
        from django.db import connection

        from brokers.models import Persistence
        from brokers.services.brokers import broker_define
        from brokers.services.message_input import MessageInput
        from brokers.services.messages import message_get, message_put
        from brokers.services.queues import queue_define
        from transactions.manager import transaction_commit

        call_command("migrate", interactive=False, verbosity=0)
        broker_define(name="WRITES", description="python -m bench.writes")
        queue_define(broker="WRITES", name="Q", max_depth=999_999_999, default_persistence=Persistence.PERSISTENT)
        body = body_text().encode("ascii")

        def put(batch: int) -> str:
            inputs = [MessageInput(body=body, persistence=Persistence.PERSISTENT) for _ in range(batch)]
            return message_put(broker="WRITES", queue="Q", messages=inputs, syncpoint="yes").transaction_id

        def get(batch: int) -> str:
            got = message_get(broker="WRITES", queue="Q", syncpoint="yes", batch=batch)
            if len(got.messages) != batch:
                raise RuntimeError(f"get: {len(got.messages)} messages of {batch}")
            return got.transaction_id

        def commit(transaction_id: str) -> None:
            transaction_commit(transaction_id=transaction_id)

        for batch in (1, 100):  # warm-up: caches, prepared statements, the first WAL frames
            commit(put(batch))
            commit(get(batch))

        counter = _PostgresCounter(connection, url) if postgres else _SQLiteCounter(connection)
        results: list[StepCount] = []
        try:
            for batch in (1, 100):
                n = max(1, units // batch) if batch > 1 else units
                for step in STEPS:
                    pending: list[str] = []
                    if step == "put commit":
                        pending = [put(batch) for _ in range(n)]
                    elif step == "get":
                        for _ in range(n):
                            commit(put(batch))
                    elif step == "get commit":
                        pending = [get(batch) for _ in range(n)]
                    counter.reset()
                    for i in range(n):
                        if step == "put":
                            commit_later = put(batch)
                            pending.append(commit_later)
                        elif step == "get":
                            pending.append(get(batch))
                        else:
                            commit(pending[i])
                    counts = counter.read()
                    if step in ("put", "get"):
                        for transaction_id in pending:  # tidy up outside the count
                            commit(transaction_id)
                    wal, transactions, statements, round_trips = counts
                    results.append(
                        StepCount(
                            step=step,
                            batch=batch,
                            units=n,
                            wal_pages=wal / n,
                            transactions=transactions / n,
                            statements=statements / n,
                            round_trips=round_trips / n,
                        )
                    )
        finally:
            counter.close()
            connection.close()
        return results
    finally:
        if admin is not None:
            admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
            admin.close()
        shutil.rmtree(scratch, ignore_errors=True)


def totals(results: list[StepCount]) -> list[dict]:
    """Per unit of work: put+commit, get+commit, and the whole put+commit+get+commit."""
    out = []
    for batch in sorted({r.batch for r in results}):
        by_step = {r.step: r for r in results if r.batch == batch}
        for name, steps in (
            ("put+commit", ("put", "put commit")),
            ("get+commit", ("get", "get commit")),
            ("put+commit+get+commit", STEPS),
        ):
            out.append(
                {
                    "unit": name,
                    "batch": batch,
                    **{
                        k: round(sum(getattr(by_step[s], k) for s in steps), 2)
                        for k in ("wal_pages", "transactions", "statements", "round_trips")
                    },
                }
            )
    return out


def floor_pages(*, directory: Path, units: int) -> list[dict]:
    """WAL pages per unit of work of the floor's statements (``bench.floor``) and
    of the plain baseline, counted the same way, to set beside the engine's."""
    from .floor import Floor

    scratch = Path(tempfile.mkdtemp(prefix="baton-writes-floor-", dir=directory))
    floor = Floor(scratch / "floor.sqlite3")
    try:
        floor.conn.execute("PRAGMA wal_autocheckpoint=0")
        page_size = floor.conn.execute("PRAGMA page_size").fetchone()[0]
        wal = Path(f"{floor.path}-wal")

        def pages(work, n: int) -> float:
            floor.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            before = wal.stat().st_size if wal.exists() else 0
            for _ in range(n):
                work()
            after = wal.stat().st_size
            return (after - max(before, SQLITE_WAL_HEADER)) / (page_size + SQLITE_FRAME_HEADER) / n

        out = []
        for batch in (1, 100):
            n = max(1, units // batch) if batch > 1 else units
            floor.put_commit(batch)  # warm-up
            floor.get_commit(batch)
            put = pages(lambda b=batch: floor.put_commit(b), n)
            get = pages(lambda b=batch: floor.get_commit(b), n)
            plain = pages(lambda b=batch: floor.plain(b), n)
            out += [
                {"unit": "floor put+commit", "batch": batch, "wal_pages": round(put, 2)},
                {"unit": "floor get+commit", "batch": batch, "wal_pages": round(get, 2)},
                {"unit": "floor put+commit+get+commit", "batch": batch, "wal_pages": round(put + get, 2)},
                {"unit": "plain insert+commit", "batch": batch, "wal_pages": round(plain, 2)},
            ]
        return out
    finally:
        floor.close()
        shutil.rmtree(scratch, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.writes", description=__doc__.split("\n\n")[0])
    parser.add_argument("--units", type=int, default=200, help="units of work of one message per step (default 200)")
    parser.add_argument("--json", action="store_true", help="one JSON object per line")
    parser.add_argument(
        "--directory", type=Path, default=None, help="where the scratch SQLite file goes (default var/)"
    )
    parser.add_argument(
        "--floor",
        action="store_true",
        help="also the floor's and the plain baseline's WAL pages per unit of work (SQLite)",
    )
    args = parser.parse_args(argv)
    if args.units < 1:
        parser.error("--units must be at least 1")
    directory = args.directory or Path(os.environ.get("BATON_VAR_DIR") or Path(__file__).resolve().parents[2] / "var")
    if not directory.is_dir():
        directory.mkdir(parents=True, exist_ok=True)
    floors = floor_pages(directory=directory, units=args.units) if args.floor else []
    results = run(units=args.units, directory=directory)
    if args.json:
        for result in results:
            print(json.dumps({"kind": "step", **asdict(result)}))
        for total in totals(results):
            print(json.dumps({"kind": "unit", **total}))
        for line in floors:
            print(json.dumps({"kind": "floor", **line}))
        return 0
    database = "PostgreSQL" if os.environ.get("DATABASE_URL", "").startswith("postgres") else "SQLite"
    print(f"Per step, averaged over the units of work ({database}; 1 KiB persistent messages)")
    print(HEADER)
    for result in results:
        print(result.row())
    print()
    print(
        f"{'unit of work':<22} {'batch':>5} {'WAL pages':>10} {'transactions':>13} {'statements':>11}"
        f" {'round trips':>12}"
    )
    for t in totals(results):
        print(
            f"{t['unit']:<22} {t['batch']:>5} {t['wal_pages']:>10.1f} {t['transactions']:>13.2f}"
            f" {t['statements']:>11.1f} {t['round_trips']:>12.1f}"
        )
    if floors:
        print()
        print(f"{'SQLite, the same count':<30} {'batch':>5} {'WAL pages':>10}")
        for line in floors:
            print(f"{line['unit']:<30} {line['batch']:>5} {line['wal_pages']:>10.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

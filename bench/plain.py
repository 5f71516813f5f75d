"""The plain baselines: what the database itself does for the same work, measured in the
same run, on the same disk and at the same durability as Baton's durable commits.

* SQLite: a plain table of 1 KiB blobs in a scratch SQLite file of its own, beside the
  benchmark's database (same directory, same filesystem), opened with Python's
  :mod:`sqlite3` with ``journal_mode=WAL`` and ``synchronous=FULL`` (a sync at every
  commit); a unit of work is ``BEGIN IMMEDIATE``, the INSERTs, ``COMMIT``. Measured after
  the WAL has reached its working size (``SQLITE_WAL_WARMUP_UNITS``), as Baton's has.
* PostgreSQL: a scratch table created (and dropped) in the benchmark's database, through
  psycopg 3, on a session with ``synchronous_commit=on`` set explicitly; a unit of work is
  the INSERTs and ``COMMIT``. The server's own ``fsync`` and ``synchronous_commit`` are
  reported with the figures: a server started with ``fsync=off`` makes every figure
  meaningless.

One row per commit and 100 rows per commit, as many messages as Baton's scenarios move
(:func:`.report.scenario_messages`). Needs no Django: it runs in the command's own process.
"""

from __future__ import annotations

import secrets
import sqlite3
import sys
import time
from pathlib import Path
from typing import Callable
from urllib.parse import urlsplit

from .report import BATCHES, BenchmarkError, Result, body_text, scenario_messages

PLAIN_SQLITE = "plain SQLite"
PLAIN_POSTGRES = "plain PostgreSQL"
OPERATION = "insert+commit"
#: Units of work done before each measurement (first pages of the file, the first sync).
WARMUP_UNITS = 3
#: SQLite: units of one row done first, so that the WAL is measured at its working size.
#: About 1.7 pages each, 1,200 of them pass the default auto-checkpoint (1,000 pages) at
#: least once; after it the WAL file is written over from its start instead of growing,
#: and a sync of a growing file costs more (measured: 3,900–4,300 single-row commits per
#: second on a fresh file, 5,500–8,200 on a warmed one). Baton's units of work write about
#: 33 pages each, so its WAL reaches that size in its warm-up and first few units: both
#: sides are measured on a warm WAL.
SQLITE_WAL_WARMUP_UNITS = 1200

SQLITE_SYNCHRONOUS = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}


def database_kind(database_url: str) -> str | None:
    """ "sqlite", "postgres" or None (no plain baseline for that database)."""
    scheme = urlsplit(database_url).scheme.lower()
    if scheme.startswith("sqlite"):
        return "sqlite"
    if scheme in ("postgres", "postgresql", "pgsql", "postgis"):
        return "postgres"
    return None


def sqlite_path(database_url: str, *, base: Path) -> Path:
    """The file a SQLite database URL names, read as the settings read it
    (``dj_database_url``); a relative path is relative to ``base`` (where the children run)."""
    import dj_database_url

    name = str(dj_database_url.parse(database_url)["NAME"] or "")
    if not name or name == ":memory:":
        raise BenchmarkError(f"No SQLite file in {database_url}: the plain baseline needs a directory on disk.")
    return base / name  # an absolute name stays as it is


def _measure(label: str, *, messages: int, progress: bool, unit: Callable[[int], None]) -> list[Result]:
    """Per batch size: warm up, then ``unit(batch)`` until the scenario's messages are in."""
    results = []
    for batch in BATCHES:
        total = scenario_messages(messages, batch=batch)
        for _ in range(WARMUP_UNITS):
            unit(batch)
        if progress:
            print(f"  {label} {OPERATION}, batch {batch}: {total} messages", file=sys.stderr, flush=True)
        start = time.perf_counter()
        for _ in range(total // batch):
            unit(batch)
        results.append(Result(label, OPERATION, 1, batch, total, time.perf_counter() - start))
    return results


def run_plain_sqlite(*, directory: Path, messages: int, progress: bool = False) -> tuple[list[Result], dict]:
    """The plain SQLite baseline in a scratch file in ``directory`` (removed at the end, with
    its WAL and shared-memory files). Returns the results and what the connection reported
    (journal mode, synchronous)."""
    path = directory / f"baton-benchmark-plain-{secrets.token_hex(4)}.sqlite3"
    body = body_text().encode("ascii")
    conn = sqlite3.connect(path, isolation_level=None, timeout=30)  # autocommit: we say BEGIN ourselves
    try:
        mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        conn.execute("PRAGMA synchronous=FULL")
        synchronous = SQLITE_SYNCHRONOUS.get(conn.execute("PRAGMA synchronous").fetchone()[0], "?")
        if mode.lower() != "wal" or synchronous != "FULL":
            raise BenchmarkError(f"plain SQLite: journal_mode={mode}, synchronous={synchronous} (wanted WAL, FULL).")
        conn.execute("CREATE TABLE plain_message (id INTEGER PRIMARY KEY, body BLOB NOT NULL)")
        rows = {batch: [(body,)] * batch for batch in BATCHES}

        def unit(batch: int) -> None:
            conn.execute("BEGIN IMMEDIATE")
            if batch == 1:
                conn.execute("INSERT INTO plain_message (body) VALUES (?)", rows[1][0])
            else:
                conn.executemany("INSERT INTO plain_message (body) VALUES (?)", rows[batch])
            conn.execute("COMMIT")

        for _ in range(SQLITE_WAL_WARMUP_UNITS):
            unit(1)
        results = _measure(PLAIN_SQLITE, messages=messages, progress=progress, unit=unit)
        facts = {
            "file": str(path),
            "journal_mode": mode.upper(),
            "synchronous": synchronous,
            "sqlite_version": sqlite3.sqlite_version,
            "wal_warmup_units": SQLITE_WAL_WARMUP_UNITS,
        }
        return results, facts
    finally:
        conn.close()
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)


def postgres_conninfo(database_url: str) -> str:
    """A libpq URI for a Django-style database URL (``postgres://``, ``pgsql://``, ...)."""
    parts = urlsplit(database_url)
    return parts._replace(scheme="postgresql").geturl()


def postgres_server_settings(database_url: str) -> dict:
    """The server's durability settings, as a fresh session sees them (before any SET)."""
    import psycopg

    with psycopg.connect(postgres_conninfo(database_url), autocommit=True, connect_timeout=30) as conn:
        facts = {}
        for name in ("server_version", "fsync", "synchronous_commit", "wal_sync_method", "full_page_writes"):
            facts[name] = conn.execute(f"SHOW {name}").fetchone()[0]
        return facts


def run_plain_postgres(*, database_url: str, messages: int, progress: bool = False) -> tuple[list[Result], dict]:
    """The plain PostgreSQL baseline in a scratch table of the benchmark's database (dropped
    at the end). Returns the results and the session's settings."""
    import psycopg

    table = f"baton_benchmark_plain_{secrets.token_hex(4)}"
    body = body_text().encode("ascii")
    with psycopg.connect(postgres_conninfo(database_url), connect_timeout=30) as conn:
        conn.autocommit = True
        conn.execute("SET synchronous_commit = on")
        session = {name: conn.execute(f"SHOW {name}").fetchone()[0] for name in ("fsync", "synchronous_commit")}
        conn.execute(f"CREATE TABLE {table} (id bigserial PRIMARY KEY, body bytea NOT NULL)")
        try:
            conn.autocommit = False
            rows = {batch: [(body,)] * batch for batch in BATCHES}
            insert = f"INSERT INTO {table} (body) VALUES (%s)"

            def unit(batch: int) -> None:
                with conn.cursor() as cur:
                    if batch == 1:
                        cur.execute(insert, rows[1][0])
                    else:
                        cur.executemany(insert, rows[batch])
                conn.commit()

            results = _measure(PLAIN_POSTGRES, messages=messages, progress=progress, unit=unit)
        finally:
            conn.rollback()
            conn.autocommit = True
            conn.execute(f"DROP TABLE IF EXISTS {table}")
    return results, {"table": table, "session": session}

"""Explaining a checker finding: for each body the checker names (lost, duplicated,
visible uncommitted), what the clients did with it (the load's trace, tests/support/workload.py)
and what the database holds about it: its message rows, the journal events of its message
ids, and the units of work those touch (state, reason, cause, times, links).

Read straight from the platform's database (PostgreSQL or SQLite) once the run has settled,
before the scratch database is dropped; it changes nothing.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from contextlib import closing
from pathlib import Path
from typing import Any

#: Most bodies explained in one report (the rest are only counted by the checker).
BODIES_AT_MOST = 5
#: Most journal events shown per body.
EVENTS_AT_MOST = 80

_MESSAGE_COLUMNS = (
    "m.id, m.msg_id, q.name AS queue, b.name AS broker, m.put_transaction_id, m.get_transaction_id, m.lock_token, "
    "m.locked_until, m.lapsed_lock_token, m.commit_seq, m.delivery_count, m.backout_count, m.dead_letter_reason, "
    "m.dead_letter_queue, m.put_time"
)
_TRANSACTION_COLUMNS = (
    "id, broker, state, reason, cause_id, owner, created_at, deadline_at, commit_requested_at, resolved_at"
)


def trace_steps(path: str | Path | None, bodies: Iterable[str]) -> dict[str, list[dict]]:
    """Each body's steps in the load's trace, with every step of the units of work they
    name (their commits, refreshes and rollbacks), in time order."""
    wanted = set(bodies)
    if not path or not Path(path).exists() or not wanted:
        return {b: [] for b in wanted}
    steps = [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
    txns: dict[str, set[str]] = {b: set() for b in wanted}
    for step in steps:
        for body in wanted.intersection(step.get("bodies") or ()):
            if step.get("txn"):
                txns[body].add(step["txn"])
    found: dict[str, list[dict]] = {}
    for body in wanted:
        found[body] = [s for s in steps if body in (s.get("bodies") or ()) or (s.get("txn") in txns[body])]
    return found


def database_facts(database_url: str, bodies: Iterable[str], msg_ids: dict[str, set[str]]) -> dict[str, dict]:
    """Each body's message rows, the journal of its message ids and the units of work the
    journal names, from the platform's database."""
    with closing(_connect(database_url)) as conn:
        mark = "?" if isinstance(conn, sqlite3.Connection) else "%s"
        facts: dict[str, dict] = {}
        for body in bodies:
            rows = _rows(
                conn,
                f"SELECT {_MESSAGE_COLUMNS} FROM brokers_message m JOIN brokers_queue q ON q.id = m.queue_id "
                f"JOIN brokers_broker b ON b.id = q.broker_id WHERE m.body = {mark}",
                [body.encode()],
            )
            ids = sorted(set(msg_ids.get(body, ())) | {r["msg_id"] for r in rows})
            journal: list[dict] = []
            if ids:
                journal = _rows(
                    conn,
                    "SELECT id, at, kind, broker, queue, transaction_id, msg_id, detail FROM transactions_journalevent "
                    f"WHERE msg_id IN ({', '.join([mark] * len(ids))}) ORDER BY id",
                    ids,
                )
            txn_ids = sorted(
                {r["transaction_id"] for r in journal if r["transaction_id"]}
                | {r[k] for r in rows for k in ("put_transaction_id", "get_transaction_id") if r[k]}
            )
            units: list[dict] = []
            links: list[dict] = []
            if txn_ids:
                marks = ", ".join([mark] * len(txn_ids))
                units = _rows(
                    conn, f"SELECT {_TRANSACTION_COLUMNS} FROM transactions_transaction WHERE id IN ({marks})", txn_ids
                )
                journal += _rows(
                    conn,
                    "SELECT id, at, kind, broker, queue, transaction_id, msg_id, detail FROM transactions_journalevent "
                    f"WHERE transaction_id IN ({marks}) AND msg_id = '' ORDER BY id",
                    txn_ids,
                )
                journal.sort(key=lambda r: r["id"])
                links = _rows(
                    conn,
                    "SELECT upstream_id, downstream_id, resource_ref, created_at FROM transactions_link "
                    f"WHERE upstream_id IN ({marks}) OR downstream_id IN ({marks})",
                    txn_ids + txn_ids,
                )
            facts[body] = {
                "rows": rows,
                "msg_ids": ids,
                "journal": journal[:EVENTS_AT_MOST],
                "units_of_work": units,
                "links": links,
            }
        return facts


def explained(database_url: str, trace_path: str | Path | None, bodies: Iterable[str]) -> dict[str, dict]:
    """The clients' steps and the database's facts for (at most ``BODIES_AT_MOST`` of) ``bodies``."""
    chosen = sorted(set(bodies))[:BODIES_AT_MOST]
    steps = trace_steps(trace_path, chosen)
    msg_ids = {b: {i for s in steps[b] if b in (s.get("bodies") or ()) for i in _ids_of(s, b)} for b in chosen}
    try:
        facts = database_facts(database_url, chosen, msg_ids)
    except Exception as exc:  # noqa: BLE001 - a diagnosis must not hide the finding it explains
        facts = {b: {"error": f"{type(exc).__name__}: {exc}"} for b in chosen}
    return {b: {"client": steps[b], "database": facts[b]} for b in chosen}


def _ids_of(step: dict, body: str) -> list[str]:
    """The message id a step learnt for ``body`` (its position among the step's bodies)."""
    ids = list(step.get("msg_ids") or [])
    for put in step.get("puts") or ():  # a unit of work's pipelined puts, batch after batch
        ids += put.get("msg_ids") or []
    bodies = step.get("bodies") or []
    if len(ids) == len(bodies) and body in bodies:
        return [ids[bodies.index(body)]]
    return []


def _connect(database_url: str):
    if database_url.startswith("sqlite:///"):
        return sqlite3.connect(f"file:{database_url[len('sqlite:///') :]}?mode=ro", uri=True)
    import psycopg

    return psycopg.connect(database_url.replace("postgres://", "postgresql://", 1), autocommit=True)


def _rows(conn, sql: str, params: list) -> list[dict[str, Any]]:
    cur = conn.execute(sql, params)
    names = [d[0] for d in cur.description]
    return [{n: _plain(v) for n, v in zip(names, row, strict=True)} for row in cur.fetchall()]


def _plain(value: Any) -> Any:
    if isinstance(value, (bytes, memoryview)):
        return bytes(value).decode("utf-8", "replace")
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (dict, list)):
        return value
    return str(value)

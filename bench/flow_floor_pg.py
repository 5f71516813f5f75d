"""The floor under the queue flow through sessions on PostgreSQL: a bare server that does only
what the flow's calls must, in front of the plain PostgreSQL queue's own statements, measured
in the same run as Baton and the plain queue (``python -m bench benchmark --postgres --peers``;
docs/performance.md, "PostgreSQL: the flow's floor").

Uvicorn (the same WebSocket protocol as Baton's server, pinned to a CPU as Baton's is) serves
``app`` below: each request frame is JSON decoded and its reply JSON encoded, as Baton's
session does; each WebSocket has a PostgreSQL connection of its own (psycopg's asynchronous
one, on the event loop's thread: no thread hop), at the plain queue's durability
(``synchronous_commit=on``); a ``put`` is the plain queue's ``INSERT`` and ``COMMIT``, a
``get`` its ``DELETE … FOR UPDATE SKIP LOCKED … RETURNING`` and ``COMMIT``, or, when the queue
is empty, a wait for a put in this server (an asyncio event, no polling) up to the call's
``wait``. No validation, no permission, no unit of work, no journal, no message descriptor,
no wake-up for other processes — each message is a row id, a message id and its body. The
clients are :mod:`.flow_floor`'s (``websockets``' synchronous client, the frames Baton's
client sends). So the figure bounds from above what any server on this stack (Python,
Uvicorn, psycopg, the same PostgreSQL at the same durability, on the same cores) could move
through the same flow: a ratio to the plain queue this floor does not reach, Baton cannot
reach either.

With ``writes="engine"`` (``run_flow_floor_pg``; the benchmark runs both) each call also
makes the writes the engine's promises need on top of the message's, and no others, each
call still one statement and its ``COMMIT`` (one round trip): a put reserves room for its
messages on the queue's counter row against the queue's limit (two puts never both take
the last room: the row stays locked from that statement to the end of the commit, as the
engine's does) and writes one journal row for the call (its message ids as an array); a
get gives the room back on a counter row of its connection's own (no wait on puts or other
gets, as the engine's release rows) and writes one journal row. No unit of work, no
validation, no descriptor: what this floor does not reach, no server on this stack that
keeps a queue's limit and a journal reaches either.

With ``writes="contract"`` the engine's writes are made for messages as the contract has
them (``bench/floor_contract.py``): every field of a message stored, its body as bytes,
gets in the default delivery sequence (priority, then put order) skipping expired messages,
and each message answered with its descriptor, as docs/api.md says a put and a get answer.

Needs no Django; asserts nothing (``tests/bench/test_flow_floor_pg.py`` checks what it moves).
"""

from __future__ import annotations

import asyncio
import datetime
import os
import secrets
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from . import floor_contract as contract
from .bare_server import bare_server_started, bare_server_stopped
from .flow_floor import floor_sides
from .flows import flows
from tests.support.live import HOST
from .report import Result, body_text

#: The server's PostgreSQL (a libpq connection string).
CONNINFO_ENV = "BATON_FLOW_FLOOR_PG"
#: "engine": each call also makes the engine's own writes (the room, the journal).
WRITES_ENV = "BATON_FLOW_FLOOR_PG_WRITES"
LABEL = "session floor (bare Uvicorn + PostgreSQL)"
#: The same floor with the writes the engine's promises add (``writes="engine"``).
ENGINE_LABEL = "session floor + the engine's writes (bare Uvicorn + PostgreSQL)"
#: The same floor with the engine's writes for the contract's messages (``writes="contract"``).
CONTRACT_LABEL = "session floor + the engine's writes + the contract's message (bare Uvicorn + PostgreSQL)"
#: What the benchmark's facts say of it (and of it with the engine's writes).
ENGINE_FACTS = (
    "the same bare server (bench/flow_floor_pg.py, writes=engine) with the engine's writes besides: a put "
    "reserves room on the queue's counter row against its limit and writes a journal row, a get gives the "
    "room back on its connection's own row and writes a journal row; one statement and its COMMIT a call"
)
CONTRACT_FACTS = (
    "the same bare server (bench/flow_floor_pg.py, writes=contract) with the engine's writes for messages as "
    "the contract has them (bench/floor_contract.py): every field stored, bodies as bytes, gets by priority "
    "then put order skipping expired messages, each message answered with its descriptor"
)
FACTS = (
    "a bare Uvicorn server (bench/flow_floor_pg.py): put and get only, the plain PostgreSQL queue's "
    "statements (synchronous_commit=on), a psycopg connection per WebSocket on the event loop's thread"
)

# --- the server -----------------------------------------------------------------------------

#: A queue's table is named after it (the runner creates it; queue names here are identifiers).
_INSERT = "INSERT INTO {table} (msg_id, body) SELECT * FROM unnest(%s::text[], %s::text[])"
_DELETE = (
    "DELETE FROM {table} WHERE id IN (SELECT id FROM {table} ORDER BY id FOR UPDATE SKIP LOCKED LIMIT %s) "
    "RETURNING id, msg_id, body"
)
#: ``writes="engine"``: the put's messages, its journal row and its room in one statement (the
#: room last: the counter row is locked from there to the end of the commit); no row when the
#: queue is full. The queue's tables: ``{table}`` (messages), ``{table}_room`` (one row: room
#: reserved, the limit), ``{table}_released`` (room given back, a row per connection),
#: ``{table}_journal`` (a row per call).
_INSERT_ENGINE = (
    "WITH m AS (INSERT INTO {table} (msg_id, body) SELECT * FROM unnest(%s::text[], %s::text[]) RETURNING msg_id),"
    " j AS (INSERT INTO {table}_journal (kind, msg_ids, count) SELECT 'put', array_agg(msg_id), count(*) FROM m)"
    " UPDATE {table}_room SET reserved = reserved + %s WHERE id = 1"
    " AND reserved + %s - (SELECT COALESCE(SUM(released), 0) FROM {table}_released) <= max_depth RETURNING 1"
)
#: ``writes="engine"``: the get's messages, the room they give back (on the connection's own
#: row) and its journal row (none when it took nothing) in one statement.
_DELETE_ENGINE = (
    "WITH d AS (" + _DELETE + "),"
    " r AS (INSERT INTO {table}_released (stripe, released) SELECT %s, count(*) FROM d HAVING count(*) > 0"
    " ON CONFLICT (stripe) DO UPDATE SET released = {table}_released.released + excluded.released),"
    " j AS (INSERT INTO {table}_journal (kind, msg_ids, count) SELECT 'get', array_agg(msg_id), count(*) FROM d"
    " HAVING count(*) > 0)"
    " SELECT id, msg_id, body FROM d"
)
#: The broker a floor's messages are answered as on (the flows name it).
_BROKER = "FLOOR"
#: Gets waiting for a put, by queue (one event loop: no lock).
_ARRIVED: dict[str, asyncio.Event] = {}
#: Each connection's row of given-back room, by its ``id()`` (``writes="engine"`` and ``"contract"``).
_STRIPES: dict[int, int] = {}


async def app(scope, receive, send) -> None:
    """``/api/session/``'s ``put`` and ``get``, and nothing else; a connection per WebSocket."""
    if scope["type"] != "websocket":
        return
    import json

    import orjson
    import psycopg

    event = await receive()
    if event["type"] != "websocket.connect":
        return
    conn = await psycopg.AsyncConnection.connect(os.environ[CONNINFO_ENV])
    try:
        await conn.execute("SET synchronous_commit = on")
        await conn.commit()
        await send({"type": "websocket.accept"})
        while True:
            event = await receive()
            if event["type"] != "websocket.receive":
                return
            reply = await _answer(conn, json.loads(event["text"]))
            if _contract():  # the descriptors encoded as Baton's session encodes its replies
                text = orjson.dumps(reply).decode()
            else:
                text = json.dumps(reply, separators=(",", ":"))
            await send({"type": "websocket.send", "text": text})
    finally:
        _STRIPES.pop(id(conn), None)
        await conn.close()


def _engine_writes() -> bool:
    return os.environ.get(WRITES_ENV) == "engine"


def _contract() -> bool:
    return os.environ.get(WRITES_ENV) == "contract"


async def _put_contract(conn, queue: str, messages: list[dict]) -> list[dict] | None:
    """``writes="contract"``: the put's messages as stored; None when the queue is full."""
    shared, bodies = contract.put_fields(messages, now=datetime.datetime.now(datetime.timezone.utc))
    ids = [secrets.token_hex(24) for _ in bodies]
    n = len(bodies)
    cursor = await conn.execute(contract.INSERT.format(table=queue), (*shared, ids, bodies, n, n), prepare=True)
    if await cursor.fetchone() is None:
        await conn.rollback()
        return None
    await conn.commit()
    _arrived(queue)
    return contract.put_descriptors(ids, shared, queue=queue, broker=_BROKER)


async def _put(conn, queue: str, bodies: list[str]) -> list[str] | None:
    """The put's message ids; None when the queue is full (``writes="engine"``)."""
    ids = [secrets.token_hex(24) for _ in bodies]
    if _engine_writes():
        n = len(bodies)
        cursor = await conn.execute(_INSERT_ENGINE.format(table=queue), (ids, bodies, n, n), prepare=True)
        if await cursor.fetchone() is None:
            await conn.rollback()
            return None
    else:
        await conn.execute(_INSERT.format(table=queue), (ids, bodies), prepare=True)
    await conn.commit()
    _arrived(queue)
    return ids


def _arrived(queue: str) -> None:
    """Wake the gets waiting for a put to ``queue``."""
    event = _ARRIVED.pop(queue, None)
    if event is not None:
        event.set()


async def _get(conn, queue: str, batch: int, wait_s: float) -> list[tuple[int, str, str]]:
    deadline = time.monotonic() + wait_s
    while True:
        stripe = _STRIPES.setdefault(id(conn), len(_STRIPES))
        if _contract():
            cursor = await conn.execute(contract.DELETE.format(table=queue), (batch, stripe), prepare=True, binary=True)
        elif _engine_writes():
            cursor = await conn.execute(_DELETE_ENGINE.format(table=queue), (batch, stripe), prepare=True)
        else:
            cursor = await conn.execute(_DELETE.format(table=queue), (batch,), prepare=True)
        rows = await cursor.fetchall()
        await conn.commit()
        remaining = deadline - time.monotonic()
        if rows or remaining <= 0:
            return rows if _contract() else sorted(rows)
        event = _ARRIVED.setdefault(queue, asyncio.Event())
        try:
            await asyncio.wait_for(event.wait(), remaining)
        except TimeoutError:
            pass


async def _answer(conn, request: dict) -> dict:
    op, queue = request.get("op"), request.get("queue", "")
    if not queue.isidentifier():
        return {"re": request.get("id"), "status": 400, "code": "invalid_input", "message": "No such queue."}
    if op == "put" and _contract():
        many = "messages" in request
        try:
            stored = await _put_contract(conn, queue, request["messages"] if many else [request])
        except contract.Refused as exc:
            return {"re": request["id"], "status": 400, "code": "invalid_input", "message": str(exc)}
        if stored is None:
            return {"re": request["id"], "status": 409, "code": "queue_full", "message": "The queue is full."}
        return {"re": request["id"], "status": 201, **({"messages": stored} if many else stored[0])}
    if op == "get" and _contract():
        rows = await _get(conn, queue, int(request.get("batch", 1)), float(request.get("wait", 0)))
        return {
            "re": request["id"],
            "status": 200,
            "messages": contract.get_descriptors(rows, queue=queue, broker=_BROKER),
        }
    if op == "put":
        many = "messages" in request
        bodies = [m.get("body", "") for m in request["messages"]] if many else [request.get("body", "")]
        ids = await _put(conn, queue, bodies)
        if ids is None:
            return {"re": request["id"], "status": 409, "code": "queue_full", "message": "The queue is full."}
        if many:
            return {"re": request["id"], "status": 201, "messages": [{"msg_id": i} for i in ids]}
        return {"re": request["id"], "status": 201, "msg_id": ids[0]}
    if op == "get":
        rows = await _get(conn, queue, int(request.get("batch", 1)), float(request.get("wait", 0)))
        return {"re": request["id"], "status": 200, "messages": [{"msg_id": m, "body": b} for _, m, b in rows]}
    return {"re": request.get("id"), "status": 400, "code": "invalid_input", "message": f"No {op!r} here."}


# --- running it -----------------------------------------------------------------------------


@contextmanager
def flow_floor_pg_server(*, conninfo: str, directory: Path, writes: str = "queue") -> Iterator[str]:
    """The floor's server on a loopback port, in front of the PostgreSQL at ``conninfo``, its
    log in ``directory``; ``writes`` "queue" (the plain queue's statements) or "engine"
    (those and the engine's own writes); yields its session URL."""
    proc, port = bare_server_started(
        "bench.flow_floor_pg:app",
        {CONNINFO_ENV: conninfo, WRITES_ENV: writes},
        log=directory / f"flow-floor-pg-{writes}.log",
    )
    try:
        yield f"ws://{HOST}:{port}/api/session/"
    finally:
        bare_server_stopped(proc)


#: The limit of each queue's room (``writes="engine"``): a flow never reaches it.
MAX_DEPTH = 10_000_000


def run_flow_floor_pg(
    *, database_url: str, directory: Path, messages: int, progress: bool = False, writes: str = "queue"
) -> list[Result]:
    """The flows of :func:`bench.flows.flows` (1+1 and 4+4, one message and 100 per call)
    through the floor's server on the PostgreSQL at ``database_url``, scratch tables per
    flow's queue (dropped at the end); ``writes``: "queue" or "engine" (the module's text)."""
    import psycopg

    from .plain import postgres_conninfo

    conninfo, body, tag = postgres_conninfo(database_url), body_text(), secrets.token_hex(4)
    tables: list[str] = []

    def open_sides(clients: int, batch: int):
        queue = f"baton_flow_floor_{tag}_{clients}_{batch}"
        with psycopg.connect(conninfo, autocommit=True, connect_timeout=30) as admin:
            if writes == "contract":
                admin.execute(contract.TABLE.format(table=queue))
                admin.execute(contract.INDEX.format(table=queue))
            else:
                admin.execute(
                    f"CREATE TABLE {queue} (id bigserial PRIMARY KEY, msg_id text NOT NULL, body text NOT NULL)"
                )
            tables.append(queue)
            if writes in ("engine", "contract"):
                admin.execute(
                    f"CREATE TABLE {queue}_room (id int PRIMARY KEY, reserved bigint NOT NULL,"
                    " max_depth bigint NOT NULL)"
                )
                admin.execute(f"INSERT INTO {queue}_room VALUES (1, 0, %s)", (MAX_DEPTH,))
                admin.execute(f"CREATE TABLE {queue}_released (stripe int PRIMARY KEY, released bigint NOT NULL)")
                admin.execute(
                    f"CREATE TABLE {queue}_journal (id bigserial PRIMARY KEY, at timestamptz NOT NULL DEFAULT now(),"
                    " kind text NOT NULL, msg_ids text[] NOT NULL, count int NOT NULL)"
                )
                tables.extend([f"{queue}_room", f"{queue}_released", f"{queue}_journal"])

        return floor_sides(url, queue=queue, body=body, batch=batch)

    label = {"engine": ENGINE_LABEL, "contract": CONTRACT_LABEL}.get(writes, LABEL)
    try:
        with flow_floor_pg_server(conninfo=conninfo, directory=directory, writes=writes) as url:
            return flows(label=label, operation="put+get", messages=messages, progress=progress, open_sides=open_sides)
    finally:
        with psycopg.connect(conninfo, autocommit=True, connect_timeout=30) as admin:
            for table in tables:
                admin.execute(f"DROP TABLE IF EXISTS {table}")


def left_behind(*, database_url: str) -> dict[str, int]:
    """The floor's tables still in the database and their rows (none after a run)."""
    import psycopg

    from .plain import postgres_conninfo

    with psycopg.connect(postgres_conninfo(database_url), autocommit=True, connect_timeout=30) as conn:
        names = [
            name
            for (name,) in conn.execute("SELECT tablename FROM pg_tables WHERE tablename LIKE 'baton_flow_floor_%%'")
        ]
        return {name: conn.execute(f"SELECT count(*) FROM {name}").fetchone()[0] for name in names}

"""The floor under the queue flow through sessions: a bare server that does only what the
flow's calls must, on the embedded default's stack, measured in the same run as Baton and
its peers (``python -m bench benchmark --peers`` on SQLite; docs/performance.md, "The flow's
floor").

Uvicorn (the same WebSocket protocol as Baton's server) serves ``app`` below: each request
frame is JSON decoded and its reply JSON encoded, as Baton's session does; a ``put`` inserts
its messages into the queue's table and commits; a ``get`` deletes up to ``batch`` of the
oldest and commits, or, when the queue is empty, waits for a put (an asyncio event, no
polling) up to its ``wait``. Every reply waits for its commit to be on disk (SQLite, WAL, a
group commit: one ``fdatasync`` of the WAL for the calls committed in one turn of the event
loop, what ``synchronous=FULL`` promises, as Baton's engine does). One connection, used on
the event loop's thread: no thread hop, no validation, no permission, no unit of work, no
journal, no message descriptor — each message is a row id, a message id and its body. The
clients are as lean: a WebSocket each (``websockets``' synchronous client, as Baton's
Python client uses) sending the frames Baton's client sends for the same calls. So the
figure bounds from above what any server on this stack (Python, Uvicorn, SQLite at the same
durability) could move through the same flow: a ratio this floor does not reach against a
peer, Baton cannot reach either.

Needs no Django; asserts nothing (``tests/bench/test_flow_floor.py`` checks what it moves).
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import sqlite3
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Iterator

from .bare_server import bare_server_started, bare_server_stopped, frames_answered
from .flows import GET_WAIT_S, flows
from tests.support.live import HOST
from .report import Result, body_text

#: The server's SQLite file.
DATABASE_ENV = "BATON_FLOW_FLOOR_DATABASE"
LABEL = "session floor (bare Uvicorn + SQLite)"
#: What the benchmark's facts say of it.
FACTS = (
    "a bare Uvicorn server (bench/flow_floor.py): put and get only, a table per queue on SQLite "
    "(WAL; every reply after its commit is on disk, one fdatasync per turn of the event loop), on the "
    "event loop's thread"
)

# --- the server -----------------------------------------------------------------------------


class _Store:
    """The queues: a table each, on one connection (the event loop's thread only). Durable
    as ``synchronous=FULL`` with a group commit: each call commits at ``NORMAL`` (its WAL
    frames written, not synced), then waits for one ``fdatasync`` of the WAL shared by every
    call that committed in the same turn of the event loop, before its reply goes."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.tables: dict[str, str] = {}
        self.arrived: dict[str, asyncio.Event] = {}
        self.wal: int | None = None
        self.sync: asyncio.Future | None = None

    def table(self, queue: str) -> str:
        name = self.tables.get(queue)
        if name is None:
            name = self.tables[queue] = f"q_{len(self.tables)}"
            self.conn.execute(f"CREATE TABLE IF NOT EXISTS {name} (id INTEGER PRIMARY KEY, msg_id TEXT, body TEXT)")
        return name

    async def synced(self) -> None:
        """Return once what this connection committed is on disk: the sync already asked
        for in this turn of the loop, or a new one at its end."""
        if self.sync is None:
            self.sync = asyncio.get_running_loop().create_future()
            asyncio.get_running_loop().call_soon(self._synced)
        await self.sync

    def _synced(self) -> None:
        done, self.sync = self.sync, None
        if self.wal is None:
            self.wal = os.open(f"{self.path}-wal", os.O_RDONLY | os.O_CLOEXEC)  # the connection keeps it
        os.fdatasync(self.wal)
        done.set_result(None)

    async def put(self, queue: str, bodies: list[str]) -> list[str]:
        table, ids = self.table(queue), [secrets.token_hex(24) for _ in bodies]
        self.conn.execute("BEGIN IMMEDIATE")
        self.conn.executemany(f"INSERT INTO {table} (msg_id, body) VALUES (?, ?)", zip(ids, bodies))
        self.conn.execute("COMMIT")
        event = self.arrived.pop(queue, None)
        if event is not None:
            event.set()
        await self.synced()
        return ids

    def take(self, queue: str, batch: int) -> list[tuple[int, str, str]]:
        table = self.table(queue)
        self.conn.execute("BEGIN IMMEDIATE")
        rows = self.conn.execute(
            f"DELETE FROM {table} WHERE id IN (SELECT id FROM {table} ORDER BY id LIMIT ?) RETURNING id, msg_id, body",
            (batch,),
        ).fetchall()
        self.conn.execute("COMMIT")
        return sorted(rows)

    async def get(self, queue: str, batch: int, wait_s: float) -> list[tuple[int, str, str]]:
        deadline = time.monotonic() + wait_s
        while True:
            rows = self.take(queue, batch)
            remaining = deadline - time.monotonic()
            if rows:
                await self.synced()
                return rows
            if remaining <= 0:
                return rows
            event = self.arrived.setdefault(queue, asyncio.Event())
            try:
                await asyncio.wait_for(event.wait(), remaining)
            except TimeoutError:
                pass


_STORE: _Store | None = None


async def app(scope, receive, send) -> None:
    """``/api/session/``'s ``put`` and ``get``, and nothing else."""
    global _STORE
    if scope["type"] == "websocket" and _STORE is None:
        _STORE = _Store(os.environ[DATABASE_ENV])
    await frames_answered(scope, receive, send, _answer)


async def _answer(request: dict) -> dict:
    store = _STORE
    op, queue = request.get("op"), request.get("queue", "")
    if op == "put":
        many = "messages" in request
        bodies = [m.get("body", "") for m in request["messages"]] if many else [request.get("body", "")]
        ids = await store.put(queue, bodies)
        if many:
            return {"re": request["id"], "status": 201, "messages": [{"msg_id": i} for i in ids]}
        return {"re": request["id"], "status": 201, "msg_id": ids[0]}
    if op == "get":
        rows = await store.get(queue, int(request.get("batch", 1)), float(request.get("wait", 0)))
        messages = [{"msg_id": msg_id, "body": body} for _, msg_id, body in rows]
        return {"re": request["id"], "status": 200, "messages": messages}
    return {"re": request.get("id"), "status": 400, "code": "invalid_input", "message": f"No {op!r} here."}


# --- running it -----------------------------------------------------------------------------


@contextmanager
def flow_floor_server(directory: Path) -> Iterator[str]:
    """The floor's server on a loopback port, its SQLite file in ``directory``; yields its
    session URL."""
    proc, port = bare_server_started(
        "bench.flow_floor:app",
        {DATABASE_ENV: str(directory / "flow-floor.sqlite3")},
        log=directory / "flow-floor.log",
    )
    try:
        yield f"ws://{HOST}:{port}/api/session/"
    finally:
        bare_server_stopped(proc)


class _Side:
    """One client's WebSocket, sending the frames Baton's Python client sends for a put of
    persistent messages and a get (bodies left out of the put's reply, each body once in
    the get's)."""

    def __init__(self, url: str) -> None:
        from websockets.sync.client import connect

        self._stack = ExitStack()
        self.ws = self._stack.enter_context(connect(url, max_size=2**26, compression=None))
        self.next_id = 0

    def call(self, op: str, **fields) -> dict:
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "op": op, **fields}, separators=(",", ":")))
        reply = json.loads(self.ws.recv(timeout=120))
        if reply.get("status", 500) >= 400:
            raise RuntimeError(f"the flow floor refused {op}: {reply}")
        return reply

    def close(self) -> None:
        self._stack.close()


def floor_sides(url: str, *, queue: str, body: str, batch: int):
    """The producer and consumer factories of one flow through a floor's server at ``url``
    (:func:`bench.flows.flow_run`'s ``producer`` and ``consumer``)."""

    def producer():
        side = _Side(url)
        one = {"broker": "FLOOR", "queue": queue, "body": body, "persistence": "persistent"}
        many = {"broker": "FLOOR", "queue": queue, "messages": [{"body": body, "persistence": "persistent"}] * batch}

        def put(n: int) -> None:
            side.call("put", bodies="none", **(one if n == 1 else many))

        return put, side.close

    def consumer():
        side = _Side(url)

        def get(n: int) -> int:
            fields = {"broker": "FLOOR", "queue": queue, "wait": GET_WAIT_S, "bodies": "one", "batch": n}
            return len(side.call("get", **fields)["messages"])

        return get, side.close

    return producer, consumer


def run_flow_floor(*, directory: Path, messages: int, progress: bool = False) -> list[Result]:
    """The flows of :func:`bench.flows.flows` (1+1 and 4+4, one message and 100 per call)
    through the floor's server, started in ``directory`` and stopped at the end."""
    body = body_text()
    with flow_floor_server(directory) as url:

        def open_sides(clients: int, batch: int):
            queue = f"flow_floor_{clients}_{batch}"

            return floor_sides(url, queue=queue, body=body, batch=batch)

        return flows(label=LABEL, operation="put+get", messages=messages, progress=progress, open_sides=open_sides)

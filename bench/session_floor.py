"""The floor under a session operation's server CPU: what Uvicorn and JSON alone cost per
frame, beside what Baton's session costs, with the same client in the same run
(docs/performance.md, "The serving floor").

    python -m bench.session_floor [--units 300] [--rounds 3] [--gap-ms 0 [1 5 ...]] [--json]

Starts Baton's web server as ``platform/up`` starts it (``tests.support.live``, SQLite in a scratch
directory, ``synchronous=FULL``) and, beside it, Uvicorn serving a bare ASGI application
(``app`` below) that answers each request frame with the reply Baton gave to the same
operation (recorded first, so both send the same bytes), after decoding the request and
encoding the reply as JSON; and a third, ``storage_app``, that does the same and also
writes what the unit of work must on SQLite (``bench.floor``'s fewest statements: the put's
rows in a database transaction of its own, the commit synced), on the event loop's thread.
One client, the same code for all three: units of work of one 1 KiB
persistent message — ``begin``, ``put`` (pipelined, as the Python client sends it),
``commit`` — over a WebSocket. Rounds alternate between the servers; per round it
reads each server's CPU time (user + system, from /proc) and prints the medians per
operation. The floor is what any Python server on this stack pays before it does any
work: it bounds what trimming Baton's own code can reach. The third is what any Python
server on this stack pays to serve the operation and keep its promise on SQLite.

``--gap-ms`` makes the client pause before each request it sends, as a pipeline stage that
works between its calls does (several values: the rounds of each in turn), so that each
server meets each request after an idle spell. Needs no Django in this process;
asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sqlite3
import statistics
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import httpx
from websockets.sync.client import connect

from .bare_server import bare_server_started, bare_server_stopped, frames_answered
from .floor import Floor
from tests.support.live import HOST, LivePlatform

BROKER, QUEUE = "FLOOR", "Q"
REPLIES_ENV = "BATON_FLOOR_REPLIES"
#: ``storage_app``'s SQLite file (``bench.floor``'s schema, made at the first connection).
DATABASE_ENV = "BATON_FLOOR_DATABASE"


# --- the bare server ----------------------------------------------------------------------


def _replies() -> dict[str, dict]:
    path = os.environ.get(REPLIES_ENV)
    return json.loads(Path(path).read_text()) if path else {}


async def _served(scope, receive, send, apply=None) -> None:
    """A WebSocket that answers each ``{"id", "op", ...}`` frame with the recorded reply to
    ``op`` under the frame's id, JSON decoded and encoded; ``apply(request, reply)`` first,
    if given, does the operation's work on the event loop's own thread."""
    replies = _replies()

    async def answer(request: dict) -> dict:
        reply = {"re": request["id"], **replies.get(request["op"], {"status": 200})}
        if apply is not None:
            apply(request, reply)
        return reply

    await frames_answered(scope, receive, send, answer)


async def app(scope, receive, send) -> None:
    """The bare server: JSON decoded and encoded, nothing else."""
    await _served(scope, receive, send)


_FLOOR: Floor | None = None


def _written(request: dict, reply: dict) -> None:
    """What a unit of work must write (``bench.floor``'s fewest statements): ``begin`` names a
    unit of work and writes nothing (its row goes in with the first put), ``put`` is the
    floor's put (its own database transaction, not synced), ``commit`` the floor's commit
    (synced)."""
    global _FLOOR
    if _FLOOR is None:
        _FLOOR = Floor(Path(os.environ[DATABASE_ENV]))
    op = request["op"]
    if op == "begin":
        reply["id"] = secrets.token_hex(12)
    elif op == "put":
        _FLOOR.put(request["transaction"], 1, time.time())
    elif op == "commit":
        _FLOOR.commit(request["transaction"], time.time())


async def storage_app(scope, receive, send) -> None:
    """The bare server writing what each operation must (``_written``), on the event loop's
    own thread, with no hop."""
    await _served(scope, receive, send, _written)


# --- measuring ----------------------------------------------------------------------------


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class _Session:
    """A WebSocket carrying units of work of one message, as the Python client sends them;
    ``gap_s``: the pause before each request."""

    gap_s = 0.0

    def __init__(self, url: str, token: str) -> None:
        self._stack = ExitStack()
        self.ws = self._stack.enter_context(
            # no per-message deflate, as the Python client opens its sessions
            connect(url, additional_headers={"Authorization": f"Token {token}"}, max_size=2**24, compression=None)
        )
        self.next_id = 0
        self.body = "x" * 1024

    def _send(self, op: str, **fields) -> int:
        if self.gap_s > 0:
            time.sleep(self.gap_s)  # the client's own work between its calls, not a synchronisation
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "op": op, **fields}, separators=(",", ":")))
        return self.next_id

    def _reply(self) -> dict:
        return json.loads(self.ws.recv(timeout=60))

    def unit(self) -> dict[str, dict]:
        """begin, put (not waited for), commit; the replies by operation."""
        self._send("begin", broker=BROKER)
        begun = self._reply()
        txn = begun.get("id", "")
        self._send("put", broker=BROKER, queue=QUEUE, body=self.body, persistence="persistent", transaction=txn)
        self._send("commit", transaction=txn)
        put, committed = self._reply(), self._reply()
        if committed.get("state") not in (None, "committed") or put.get("status") not in (200, 201):
            raise RuntimeError(f"unexpected replies: {put} {committed}")
        return {"begin": begun, "put": put, "commit": committed}

    def close(self) -> None:
        self._stack.close()


def _round(session: _Session, pid: int, units: int) -> float:
    """Server CPU seconds per operation over ``units`` units of work (3 operations each)."""
    cpu = _cpu_seconds(pid)
    for _ in range(units):
        session.unit()
    return (_cpu_seconds(pid) - cpu) / (units * 3)


#: The servers measured, in the order each round runs them: Baton's session, the bare
#: server, and the bare server writing what a unit of work must.
SIDES = ("baton", "floor", "floor+storage")


def run(*, units: int, rounds: int, gaps_ms: tuple[float, ...] = (0.0,)) -> dict:
    with tempfile.TemporaryDirectory(prefix="baton-session-floor-") as scratch:
        var = Path(scratch)
        platform = LivePlatform(var_dir=var, database_url=f"sqlite:///{var / 'baton.sqlite3'}")
        token = platform.prepare()
        with platform, ExitStack() as servers:
            platform.start("web")
            pids = {"baton": platform.processes["web"].pid}
            with httpx.Client(base_url=platform.url, headers={"Authorization": f"Token {token}"}, timeout=60) as http:
                http.post("/api/brokers/", json={"name": BROKER}).raise_for_status()
                http.post(f"/api/brokers/{BROKER}/queues/", json={"name": QUEUE}).raise_for_status()
            sessions = {"baton": _Session(platform.url.replace("http://", "ws://") + "/api/session/", token)}
            servers.callback(sessions["baton"].close)
            recorded = sessions["baton"].unit()
            replies_file = var / "replies.json"
            replies_file.write_text(
                json.dumps({op: {k: v for k, v in r.items() if k != "re"} for op, r in recorded.items()})
            )
            env = {REPLIES_ENV: str(replies_file), DATABASE_ENV: str(var / "floor.sqlite3")}
            for side, app in (("floor", "app"), ("floor+storage", "storage_app")):
                proc, port = bare_server_started(f"bench.session_floor:{app}", env)
                servers.callback(bare_server_stopped, proc)
                pids[side] = proc.pid
                sessions[side] = _Session(f"ws://{HOST}:{port}/api/session/", token)
                servers.callback(sessions[side].close)
            for side in SIDES:  # warm up: imports, connections, caches, the WAL's first pages
                _round(sessions[side], pids[side], max(10, units // 10))
            by_gap = []
            load_before = os.getloadavg()
            for gap_ms in gaps_ms:
                _Session.gap_s = gap_ms / 1000
                per_round: dict[str, list[float]] = {side: [] for side in SIDES}
                for _ in range(rounds):
                    for side in SIDES:
                        per_round[side].append(_round(sessions[side], pids[side], units))
                medians = {name: statistics.median(values) for name, values in per_round.items()}
                by_gap.append(
                    {
                        "gap_ms": gap_ms,
                        "server_cpu_ms_per_operation": {name: round(v * 1000, 3) for name, v in medians.items()},
                        "rounds_ms": {name: [round(v * 1000, 3) for v in values] for name, values in per_round.items()},
                    }
                )
            load_after = os.getloadavg()
        stored = _stored(var / "floor.sqlite3")
    return {
        "units": units,
        "rounds": rounds,
        "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in load_after],
        # the first gap's figures (0 ms unless asked otherwise), then every gap's
        "server_cpu_ms_per_operation": by_gap[0]["server_cpu_ms_per_operation"],
        "rounds_ms": by_gap[0]["rounds_ms"],
        "by_gap": by_gap,
        "floor_storage_wrote": stored,
    }


def _stored(path: Path) -> dict[str, int]:
    """What the storage floor's server left in its database: its units of work committed
    and its messages, one each per unit of work it served."""
    conn = sqlite3.connect(path)
    try:
        return {
            "committed_units_of_work": conn.execute(
                "SELECT count(*) FROM unit_of_work WHERE state = 'committed'"
            ).fetchone()[0],
            "messages": conn.execute("SELECT count(*) FROM message").fetchone()[0],
        }
    finally:
        conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--units", type=int, default=300, help="units of work per round (300)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds; medians are printed (3)")
    parser.add_argument(
        "--gap-ms",
        type=float,
        nargs="+",
        default=[0.0],
        metavar="MS",
        help="the client's pause before each request, in ms (0: back to back); several values are measured in turn",
    )
    parser.add_argument("--json", action="store_true", help="one JSON object")
    args = parser.parse_args()
    if any(gap < 0 for gap in args.gap_ms):
        parser.error("--gap-ms: a pause is 0 ms or more.")
    result = run(units=args.units, rounds=args.rounds, gaps_ms=tuple(args.gap_ms))
    if args.json:
        print(json.dumps(result))
        return
    print(f"load {result['load_before']} -> {result['load_after']}; {args.units} units of work x {args.rounds} rounds")
    print("server CPU per session operation (begin, put, commit of one 1 KiB persistent message), median of rounds:")
    for figures in result["by_gap"]:
        cpu = figures["server_cpu_ms_per_operation"]
        if len(result["by_gap"]) > 1 or figures["gap_ms"]:
            print(f" the client pausing {figures['gap_ms']:g} ms before each request:")
        print(f"  bare Uvicorn + JSON (the floor)                  {cpu['floor']:.3f} ms")
        print(f"  the floor writing a unit of work's fewest rows    {cpu['floor+storage']:.3f} ms")
        print(f"  Baton's session                                   {cpu['baton']:.3f} ms")
        print(f"  Baton beyond the floor with its rows              {cpu['baton'] - cpu['floor+storage']:.3f} ms")


if __name__ == "__main__":
    main()

"""The per-request cost of REST and of the session against a live web server
(docs/performance.md, "REST and session overhead").

    python -m bench.overhead [--units 300] [--batch 100] [--database-url URL] [--json]

Starts Uvicorn as ``platform/up`` starts it (``tests.support.live``) on a scratch
directory, then, one client, one request at a time: units of work of one 1 KiB persistent
message (begin, put, commit) over REST, a ``GET /api/brokers/{b}/`` (a request without a
database transaction), and the same units of work over a session (the put pipelined, as
the Python client does); then over the session units of work that get (begin, get,
commit), and both again with 100 messages a put or get (``--batch``). Prints per request
(per operation for the session; for a batch also per message per operation) the wall time
and the web server's CPU time (user + system, from /proc), which moves less with the
machine's load than the wall time does. ``--json`` prints one JSON object per line
instead. Needs no Django in this process; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import httpx

from tests.support.live import LivePlatform

#: The session scenarios use a queue of their own: their gets find what their puts put.
BROKER, QUEUE, SESSION_QUEUE = "OVERHEAD", "Q", "S"


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _measure(label: str, pid: int, count: int, per: int, step, *, messages: int = 1, warm: bool = True) -> dict:
    """Run ``step`` ``count`` times (after a warm-up); ``per`` requests or operations a step,
    ``messages`` a put or get."""
    for _ in range(max(10, count // 10) if warm else 0):  # warm up: imports, connections, caches
        step()
    cpu, start = _cpu_seconds(pid), time.perf_counter()
    for _ in range(count):
        step()
    wall = time.perf_counter() - start
    cpu = _cpu_seconds(pid) - cpu
    result = {
        "scenario": label,
        "units": count,
        "messages": messages,
        "per_s": round(count / wall, 1),
        "wall_ms": round(wall / count / per * 1000, 3),
        "server_cpu_ms": round(cpu / count / per * 1000, 3),
    }
    if messages > 1:
        result["server_cpu_us_per_message"] = round(cpu / count / per / messages * 1e6, 1)
    return result


def _line(result: dict) -> str:
    line = (
        f"{result['scenario']:<48} {result['per_s']:8.1f}/s  {result['wall_ms']:6.2f} ms wall  "
        f"{result['server_cpu_ms']:6.2f} ms server CPU"
    )
    if "server_cpu_us_per_message" in result:
        line += f"  ({result['server_cpu_us_per_message']:.1f} µs per message per operation)"
    return line


def run(*, units: int, database_url: str | None, batch: int = 100) -> list[dict]:
    with tempfile.TemporaryDirectory(prefix="baton-overhead-") as scratch:
        var = Path(scratch)
        platform = LivePlatform(var_dir=var, database_url=database_url or f"sqlite:///{var / 'baton.sqlite3'}")
        token = platform.prepare()
        with platform:
            platform.start("web")
            pid = platform.processes["web"].pid
            body = "x" * 1024
            lines = []
            with httpx.Client(base_url=platform.url, headers={"Authorization": f"Token {token}"}, timeout=60) as http:
                http.post("/api/brokers/", json={"name": BROKER}).raise_for_status()
                for name in (QUEUE, SESSION_QUEUE):
                    http.post(
                        f"/api/brokers/{BROKER}/queues/", json={"name": name, "max_depth": 999_999_999}
                    ).raise_for_status()

                def rest_unit() -> None:
                    txn = http.post(f"/api/brokers/{BROKER}/transactions/", json={}).json()["id"]
                    http.post(
                        f"/api/brokers/{BROKER}/queues/{QUEUE}/messages/",
                        json={"body": body, "persistence": "persistent", "transaction": txn},
                    ).raise_for_status()
                    assert http.post(f"/api/transactions/{txn}/commit/", json={}).json()["state"] == "committed"

                lines.append(_measure("REST begin+put+commit, per request", pid, units, 3, rest_unit))
                lines.append(
                    _measure(
                        "REST GET broker, per request",
                        pid,
                        units,
                        1,
                        lambda: http.get(f"/api/brokers/{BROKER}/").raise_for_status(),
                    )
                )

            from baton_client import Client

            client = Client(platform.url, token, transport="session")
            try:

                def session_unit() -> None:
                    txn = client.transaction(BROKER)
                    txn.put(SESSION_QUEUE, body, persistence="persistent")
                    assert txn.commit().state == "committed"

                def session_get_unit() -> None:
                    txn = client.transaction(BROKER)
                    assert txn.get(SESSION_QUEUE) is not None
                    assert txn.commit().state == "committed"

                bodies = [body] * batch

                def session_batch_unit() -> None:
                    txn = client.transaction(BROKER)
                    txn.put(SESSION_QUEUE, messages=bodies, persistence="persistent")
                    assert txn.commit().state == "committed"

                def session_batch_get_unit() -> None:
                    txn = client.transaction(BROKER)
                    assert len(txn.get(SESSION_QUEUE, batch=batch)) == batch
                    assert txn.commit().state == "committed"

                # the gets take what the puts before them put (their warm-ups too): none waits
                lines.append(_measure("session begin+put+commit, per operation", pid, units, 3, session_unit))
                warm = max(10, units // 10)
                lines.append(
                    _measure(
                        "session begin+get+commit, per operation", pid, units + warm, 3, session_get_unit, warm=False
                    )
                )
                lines.append(
                    _measure(
                        f"session begin+put {batch}+commit, per operation",
                        pid,
                        units,
                        3,
                        session_batch_unit,
                        messages=batch,
                    )
                )
                lines.append(
                    _measure(
                        f"session begin+get {batch}+commit, per operation",
                        pid,
                        units + warm,
                        3,
                        session_batch_get_unit,
                        messages=batch,
                        warm=False,
                    )
                )
            finally:
                client.close()
            return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--units", type=int, default=300, help="units of work per scenario (300)")
    parser.add_argument("--batch", type=int, default=100, help="messages a put or get in the batch scenarios (100)")
    parser.add_argument("--database-url", help="a database for the server (default: SQLite in a scratch directory)")
    parser.add_argument("--json", action="store_true", help="one JSON object per line: the load, then each result")
    args = parser.parse_args()
    if args.units < 1 or not 1 <= args.batch <= 1000:
        parser.error("--units must be at least 1 and --batch between 1 and 1000")
    before = os.getloadavg()
    results = run(units=args.units, database_url=args.database_url, batch=args.batch)
    after = os.getloadavg()
    if args.json:
        print(json.dumps({"kind": "facts", "load_before": before[0], "load_after": after[0]}))
        for result in results:
            print(json.dumps({"kind": "result", **result}))
        return
    print(f"load average: {' '.join(f'{x:.2f}' for x in before)}")
    for result in results:
        print(_line(result))
    print(f"load average: {' '.join(f'{x:.2f}' for x in after)}")


if __name__ == "__main__":
    main()

"""The per-request cost of REST and of the session against a live web server
(docs/performance.md, "REST and session overhead").

    python -m bench.overhead [--units 300] [--database-url URL]

Starts Uvicorn as ``platform/up`` starts it (``bench.live``) on a scratch
directory, then, one client, one request at a time: units of work of one 1 KiB persistent
message (begin, put, commit) over REST, a ``GET /api/brokers/{b}/`` (a request without a
database transaction), and the same units of work over a session (the put pipelined, as
the Python client does). Prints per request (per operation for the session) the wall time
and the web server's CPU time (user + system, from /proc), which moves less with the
machine's load than the wall time does. Needs no Django in this process; asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import httpx

from .live import LivePlatform

BROKER, QUEUE = "OVERHEAD", "Q"


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _measure(label: str, pid: int, count: int, per: int, step) -> str:
    for _ in range(max(10, count // 10)):  # warm up: imports, connections, caches
        step()
    cpu, start = _cpu_seconds(pid), time.perf_counter()
    for _ in range(count):
        step()
    wall = time.perf_counter() - start
    cpu = _cpu_seconds(pid) - cpu
    return (
        f"{label:<40} {count / wall:8.1f}/s  {wall / count / per * 1000:6.2f} ms wall  "
        f"{cpu / count / per * 1000:6.2f} ms server CPU"
    )


def run(*, units: int, database_url: str | None) -> list[str]:
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
                http.post(f"/api/brokers/{BROKER}/queues/", json={"name": QUEUE}).raise_for_status()

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
                    txn.put(QUEUE, body, persistence="persistent")
                    assert txn.commit().state == "committed"

                lines.append(_measure("session begin+put+commit, per operation", pid, units, 3, session_unit))
            finally:
                client.close()
            return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--units", type=int, default=300, help="units of work per scenario (300)")
    parser.add_argument("--database-url", help="a database for the server (default: SQLite in a scratch directory)")
    args = parser.parse_args()
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for line in run(units=args.units, database_url=args.database_url):
        print(line)
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()

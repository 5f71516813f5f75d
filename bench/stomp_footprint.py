"""What idle STOMP connections and waiting subscriptions cost the server: its threads and
resident memory (``/proc``) with N sockets that never send CONNECT, then with one
connection's N SUBSCRIBEs (each with a receipt, all answered), and after that connection
has gone. Baton's server runs as ``./platform/up`` runs it (``manage.py stomp_serve`` on a
scratch SQLite database, bench/stomp_race.py).

    python -m bench.stomp_footprint [N]      (N defaults to 1000)
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time

import django


def footprint(pid: int) -> dict:
    """The process's threads and resident memory (MiB)."""
    status = dict(line.split(":", 1) for line in open(f"/proc/{pid}/status").read().splitlines() if ":" in line)
    return {"threads": int(status["Threads"]), "rss_mib": round(int(status["VmRSS"].split()[0]) / 1024, 1)}


def settled(pid: int, *, seconds: float = 3.0) -> dict:
    """The footprint once the thread count has held still for a second (bounded)."""
    deadline = time.monotonic() + seconds
    last = footprint(pid)
    while time.monotonic() < deadline:
        time.sleep(1.0)  # a measurement's pace, not a synchronisation
        now = footprint(pid)
        if now["threads"] == last["threads"]:
            return now
        last = now
    return last


def _frames(sock: socket.socket, count: int, needle: bytes) -> None:
    """Read until ``count`` occurrences of ``needle`` have come (bounded by the socket's timeout)."""
    seen, data = 0, b""
    while seen < count:
        chunk = sock.recv(1 << 16)
        if not chunk:
            raise RuntimeError(f"the server closed the connection: {data[-500:]!r}")
        data = data[-len(needle) :] + chunk
        seen += chunk.count(needle) if len(chunk) >= len(needle) else 0


def measure(n: int) -> dict:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    django.setup()
    from tests.support.scratch import Scratch
    from .stomp_race import baton_stomp

    out: dict = {"n": n}
    with Scratch() as scratch, baton_stomp(scratch) as target:
        pid, port = target.pid, target.port
        out["started"] = settled(pid)
        idle = []
        for _ in range(n):
            sock = socket.create_connection(("127.0.0.1", port))
            idle.append(sock)
        out["idle_sockets"] = settled(pid)
        for sock in idle:
            sock.close()
        out["idle_closed"] = settled(pid)
        sock = socket.create_connection(("127.0.0.1", port), timeout=120)
        sock.sendall(
            f"CONNECT\naccept-version:1.2\nhost:{target.vhost}\nlogin:{target.login}\n"
            f"passcode:{target.passcode}\nheart-beat:0,0\n\n\0".encode()
        )
        _frames(sock, 1, b"CONNECTED")
        sock.sendall(
            b"".join(
                f"SUBSCRIBE\nid:{i}\ndestination:{target.destination}\nack:client\nreceipt:r{i}\n\n\0".encode()
                for i in range(n)
            )
        )
        _frames(sock, n, b"RECEIPT")
        out["subscriptions"] = settled(pid)
        sock.sendall(b"DISCONNECT\nreceipt:bye\n\n\0")
        _frames(sock, 1, b"receipt-id:bye")
        sock.close()
        out["subscriptions_closed"] = settled(pid)
    return out


if __name__ == "__main__":
    print(json.dumps(measure(int(sys.argv[1]) if len(sys.argv) > 1 else 1000), indent=2))

"""The client outbox's own cost and its forward rate, against a live platform (a web server
of its own, SQLite in a scratch directory).

    python -m bench.outbox [--messages 2000] [--body 1024]

Prints, with the load average before and after:

- keep: a put the platform cannot take (a client pointed at a port nobody listens on,
  within its back-off: kept without trying) — the outbox's own cost per queued put, which
  is mostly the synced commit of the SQLite file (``synchronous=FULL``);
- forward: a client on that file with the platform up, ``outbox.flush()``: messages a
  second, each checked on the queue afterwards (all there, once, in order);
- direct put, without and with an outbox (the platform up): what the dedup key every
  outbox put carries costs a put that goes straight through.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import tempfile
import time
from pathlib import Path

from tests.support.live import LivePlatform

BROKER, QUEUE, DIRECT = "OUTBOX.BENCH", "KEPT", "DIRECT"


def _dead_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"  # closed again: nobody listens


def run(*, messages: int, body_size: int, direct: int) -> list[dict]:
    from baton_client import Client

    body = "x" * body_size
    results: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="baton-outbox-bench-") as scratch:
        var = Path(scratch)
        platform = LivePlatform(var_dir=var, database_url=f"sqlite:///{var / 'baton.sqlite3'}")
        token = platform.prepare()
        with platform:
            platform.start("web")
            with Client(platform.url, token, transport="rest") as admin:
                admin.define_broker(BROKER)
                for name in (QUEUE, DIRECT):
                    admin.define_queue(BROKER, name, max_depth=10_000_000)
            path = var / "outbox.sqlite"

            with Client(_dead_url(), token, outbox=path) as down:
                down.put(BROKER, QUEUE, "first")  # the one that tries, fails and starts the back-off
                started = time.perf_counter()
                for n in range(messages):
                    down.put(BROKER, QUEUE, f"{n:08d}{body}")
                elapsed = time.perf_counter() - started
                assert down.outbox.depth == messages + 1
            results.append(
                {"scenario": "keep (platform unreachable), per queued put", "per_put_us": elapsed / messages * 1e6}
            )

            with Client(platform.url, token, outbox=path) as up:
                started = time.perf_counter()
                left = up.outbox.flush(timeout=None)
                elapsed = time.perf_counter() - started
                assert left == 0 and up.outbox.failed == [], (left, up.outbox.failed)
                got = []
                while batch := up.get(BROKER, QUEUE, batch=1000):
                    got += [m.text for m in batch]
                assert got == ["first"] + [f"{n:08d}{body}" for n in range(messages)], "not all, once, in order"
            results.append(
                {"scenario": "forward (flush, batches of 100)", "per_s": (messages + 1) / elapsed, "seconds": elapsed}
            )

            for label, options in (
                ("direct put, no outbox", {}),
                ("direct put, outbox (dedup key)", {"outbox": var / "d.sqlite"}),
            ):
                with Client(platform.url, token, **options) as client:
                    for _ in range(20):
                        client.put(BROKER, DIRECT, body)  # warm: the session open
                    started = time.perf_counter()
                    for _ in range(direct):
                        assert not getattr(client.put(BROKER, DIRECT, body), "queued", False)
                    elapsed = time.perf_counter() - started
                results.append({"scenario": label + ", per put (session)", "per_put_us": elapsed / direct * 1e6})
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=2000, help="messages kept, then forwarded (2000)")
    parser.add_argument("--body", type=int, default=1024, help="bytes of each body (1024)")
    parser.add_argument("--direct", type=int, default=500, help="direct puts per direct scenario (500)")
    parser.add_argument("--json", action="store_true", help="one JSON object per line")
    args = parser.parse_args()
    before = os.getloadavg()
    results = run(messages=args.messages, body_size=args.body, direct=args.direct)
    after = os.getloadavg()
    if args.json:
        print(json.dumps({"kind": "facts", "load_before": before[0], "load_after": after[0]}))
        for result in results:
            print(json.dumps({"kind": "result", **result}))
        return
    print(f"load average: {' '.join(f'{x:.2f}' for x in before)}")
    for r in results:
        figure = f"{r['per_put_us']:9.1f} µs" if "per_put_us" in r else f"{r['per_s']:9.1f} messages/s"
        print(f"{r['scenario']:<48} {figure}")
    print(f"load average: {' '.join(f'{x:.2f}' for x in after)}")


if __name__ == "__main__":
    main()

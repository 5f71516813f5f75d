"""A producer that keeps producing while the platform restarts: the client's durable outbox.

    python examples/outbox_producer.py --url http://127.0.0.1:8000 --token KEY setup
    python examples/outbox_producer.py --url ... --token KEY produce --count 600 --rate 20
    #   meanwhile, in another terminal: platform/down; sleep 10; platform/up
    python examples/outbox_producer.py --url ... --token KEY check --count 600

``produce`` puts ``count`` numbered orders at ``rate`` a second with
``Client(..., outbox="orders.outbox")``. While the platform is down each put is kept in the
outbox file (synced to disk) and answered at once with ``queued=True``; the producer does
not stop, wait or handle an error. When the platform is back, what was kept is forwarded
(by the next put to the queue and by the client's background thread), each message
exactly once and in order, and the rest go straight through. At the end it flushes what is
left. Kill it (even with SIGKILL) while the platform is down and start it again: the new
run forwards what the last one kept. ``check`` gets the orders and says whether every one
arrived once, in order.

Only the Python client (baton_client) is needed.
"""

from __future__ import annotations

import argparse
import sys
import time

from baton_client import AlreadyExists, Client

BROKER, QUEUE = "SHOP", "ORDERS"


def setup(client: Client) -> None:
    for define in (lambda: client.define_broker(BROKER), lambda: client.define_queue(BROKER, QUEUE)):
        try:
            define()
        except AlreadyExists:
            pass


def produce(client: Client, count: int, rate: float, start: int) -> None:
    kept = sent = 0
    for n in range(start, count):
        message = client.put(BROKER, QUEUE, f"order {n:06d}", persistence="persistent")
        if message.queued:
            kept += 1
        else:
            sent += 1
        if n % max(1, int(rate)) == 0:
            print(f"order {n}: {sent} sent, {kept} kept, {client.outbox.depth} waiting in the outbox", flush=True)
        time.sleep(1 / rate)  # the producer's pace
    left = client.outbox.flush(timeout=120)
    failed = client.outbox.failed
    print(f"done: {sent} sent straight, {kept} kept and forwarded; {left} still waiting, {len(failed)} refused")
    for f in failed:
        print(f"  refused: {f.message.get('body')!r} on {f.queue}: {f.code} {f.error}")


def check(client: Client, count: int) -> int:
    bodies = []
    while batch := client.get(BROKER, QUEUE, batch=500):
        bodies += [m.text for m in batch]
    expected = [f"order {n:06d}" for n in range(count)]
    if bodies == expected:
        print(f"all {count} orders arrived once, in order")
        return 0
    print(f"{len(bodies)} orders arrived, {len(set(bodies))} distinct; expected {count} in order")
    return 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--token", required=True)
    parser.add_argument("--outbox", default="orders.outbox", help="the outbox file (orders.outbox)")
    parser.add_argument("action", choices=["setup", "produce", "check"])
    parser.add_argument("--count", type=int, default=600)
    parser.add_argument("--rate", type=float, default=20, help="puts a second (20)")
    parser.add_argument("--start", type=int, default=0, help="the first order's number (to resume)")
    args = parser.parse_args()
    # a short timeout: a put that gets no answer within it is kept rather than waited for
    with Client(args.url, args.token, timeout=5, outbox=args.outbox) as client:
        if args.action == "setup":
            setup(client)
        elif args.action == "produce":
            produce(client, args.count, args.rate, args.start)
        else:
            return check(client, args.count)
    return 0


if __name__ == "__main__":
    sys.exit(main())

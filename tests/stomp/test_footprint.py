"""A connection holds no thread while it waits for frames, and a subscription none while it
waits for messages: idle sockets and many subscriptions leave the server's threads bounded
by BATON_STOMP_THREADS (docs/stomp.md, "How it is served"; bench/stomp_footprint.py
measures a real server's threads and memory)."""

from __future__ import annotations

import threading

from brokers.services.message_input import MessageInput
from brokers.services.messages import message_put

from .conftest import Raw

N = 300


def test_idle_sockets_hold_no_thread(stomp_port, stomp_broker, token, settings):
    settings.BATON_STOMP_THREADS = 4
    before = threading.active_count()
    idle = [Raw(stomp_port) for _ in range(N)]
    probe = Raw(stomp_port)  # connected after all of them: the server has taken them all
    probe.connect(token)
    assert threading.active_count() <= before + 4 + 1
    for raw in idle:
        raw.close()


def test_many_subscriptions_hold_no_thread_and_each_is_served(stomp_port, stomp_broker, token, settings):
    settings.BATON_STOMP_THREADS = 4
    before = threading.active_count()
    raw = Raw(stomp_port)
    raw.connect(token)
    raw.send(
        b"".join(
            f"SUBSCRIBE\nid:{i}\ndestination:/queue/Q1\nack:client-individual\nprefetch-count:1\nreceipt:r{i}\n\n\0".encode()
            for i in range(N)
        )
    )
    assert [raw.next().get("receipt-id") for _ in range(N)] == [f"r{i}" for i in range(N)]
    assert threading.active_count() <= before + 4 + 1  # the pool (and the wake-up listener)
    for n in range(5):  # each put is delivered once, to one of the waiting subscriptions
        message_put(broker="QM1", queue="Q1", messages=[MessageInput(body=f"m{n}".encode())])
    got = [raw.next() for _ in range(5)]
    assert sorted(f.body for f in got) == [f"m{n}".encode() for n in range(5)]
    assert len({f.get("subscription") for f in got}) == 5  # prefetch-count 1 each: five subscriptions
    raw.send(b"DISCONNECT\nreceipt:bye\n\n\0")
    assert raw.next().get("receipt-id") == "bye"

"""How a subscription gets: one get per batch that arrives, not a second one that finds
nothing; batches no larger than the engine takes, whatever ``prefetch-count`` says."""

from __future__ import annotations

import threading

from stomp_server import engine

from .conftest import bye, connected


def _gets_counted(monkeypatch) -> list[int]:
    """The number of messages each get of the STOMP server returned, in order."""
    counts: list[int] = []
    lock = threading.Lock()
    real = engine.messages_got

    def counted(*args, **kwargs):
        got = real(*args, **kwargs)
        with lock:
            counts.append(len(got))
        return got

    monkeypatch.setattr(engine, "messages_got", counted)
    return counts


def test_messages_sent_and_acknowledged_one_at_a_time_are_got_once_each(stomp_port, stomp_broker, token, monkeypatch):
    counts = _gets_counted(monkeypatch)
    conn, seen = connected(stomp_port, token)
    conn.subscribe("/queue/Q1", id="s1", ack="client-individual", headers={"receipt": "sub"})
    seen.wait(lambda: "sub" in seen.receipts)
    for n in range(10):
        conn.send("/queue/Q1", f"m{n}", headers={"receipt": f"r{n}"})
        [*_, message] = seen.wait_messages(n + 1)
        conn.ack(message.headers["ack"], receipt=f"a{n}")
        seen.wait(lambda n=n: f"a{n}" in seen.receipts)
    assert [m.body for m in seen.messages] == [f"m{n}" for n in range(10)]
    assert seen.errors == []
    bye(conn)
    # each message was got by a get of its own (the put's commit woke it); no get was made
    # right after one that had found fewer than it asked for, nor when an ACK's commit woke
    # the subscription (either would have found nothing, once per message); only a first
    # look (the subscription's start, the wake-up listener's) finds nothing
    assert sum(counts) == 10
    assert counts.count(0) <= 2, counts


def test_a_prefetch_count_above_the_largest_batch(stomp_port, stomp_broker, token, settings):
    settings.BATON_MAX_BATCH = 5
    conn, seen = connected(stomp_port, token)
    for n in range(12):
        conn.send("/queue/Q1", f"m{n}")
    conn.subscribe("/queue/Q1", id="s1", ack="client-individual", headers={"prefetch-count": "20"})
    messages = seen.wait_messages(12)
    assert sorted(m.body for m in messages) == sorted(f"m{n}" for n in range(12))
    assert seen.errors == []
    for m in messages:
        conn.ack(m.headers["ack"])
    bye(conn)


def test_what_a_get_could_take_or_settle(stomp_broker):
    """The look a woken subscription makes before it gets: True whenever a get could take a
    message or must settle a lock that ran out."""
    from datetime import timedelta

    from django.utils import timezone

    from brokers.models import Queue
    from brokers.services.message_input import MessageInput
    from brokers.services.messages import message_get, message_put
    from transactions.manager import transaction_begin
    from stomp_server.selectors import queue_may_have_messages

    queue_id = Queue.objects.get(broker__name="QM1", name="Q1").pk
    now = timezone.now
    assert not queue_may_have_messages(queue_id=queue_id, now=now())
    message_put(broker="QM1", queue="Q1", messages=[MessageInput(body="a")])
    assert queue_may_have_messages(queue_id=queue_id, now=now())
    [locked] = message_get(broker="QM1", queue="Q1", mode="peek_lock").messages
    assert not queue_may_have_messages(queue_id=queue_id, now=now())  # locked: nothing to take
    assert queue_may_have_messages(queue_id=queue_id, now=locked.locked_until + timedelta(seconds=1))  # ran out
    txn = transaction_begin(broker="QM1", timeout_ms=60_000)
    message_put(broker="QM1", queue="Q1", messages=[MessageInput(body="b")], transaction_id=txn.id)
    assert queue_may_have_messages(queue_id=queue_id, now=now())  # uncommitted: the get decides
    assert queue_may_have_messages(queue_id=queue_id + 1000, now=now())  # gone: the get says so


def test_on_an_ordered_queue_an_acknowledgement_lets_the_next_message_go(stomp_port, stomp_broker, token):
    """A get on a queue that enforces order takes nothing past a message in flight: the second
    message waits for the first's ACK, and goes as soon as that is applied (a subscription
    whose look found nothing to take does not look again for room made alone, except on
    such a queue), not at the subscription's periodic look (10 s away here)."""
    from brokers.services.queues import queue_define

    queue_define(broker="QM1", name="ORDERED", enforce_order="yes", lock_duration_ms=60_000)
    conn, seen = connected(stomp_port, token)
    conn.send("/queue/ORDERED", "m0")
    conn.subscribe("/queue/ORDERED", id="s1", ack="client-individual", headers={"prefetch-count": "10"})
    [first] = seen.wait_messages(1)
    conn.send("/queue/ORDERED", "m1", headers={"receipt": "sent"})  # its commit wakes a get that takes nothing
    seen.wait(lambda: "sent" in seen.receipts)
    conn.ack(first.headers["ack"], receipt="a0")
    seen.wait(lambda: "a0" in seen.receipts)
    [_, second] = seen.wait_messages(2, timeout=5)
    assert (first.body, second.body) == ("m0", "m1")
    assert seen.errors == []
    conn.ack(second.headers["ack"])
    bye(conn)


def test_large_messages_to_a_client_that_reads_slowly_arrive_whole_and_in_order(stomp_port, stomp_broker, token):
    """A socket that takes part of a write: the pool thread writes what it takes, the event
    loop the rest, and what is sent later (a RECEIPT the pool thread would write at once)
    waits behind it: nothing overtakes, nothing is torn."""
    from brokers.services.message_input import MessageInput
    from brokers.services.messages import message_put

    from brokers.models import Message

    from .conftest import Raw, until

    bodies = [bytes([65 + n]) * (512 * 1024 + n) for n in range(6)]
    message_put(broker="QM1", queue="Q1", messages=[MessageInput(body=b) for b in bodies])
    raw = Raw(stomp_port, rcvbuf=4096)
    raw.connect(token)
    raw.send(b"SUBSCRIBE\nid:s\ndestination:/queue/Q1\nack:auto\nreceipt:sub\n\n\0")
    # all got (and being sent) before the client reads a byte: the socket is full meanwhile
    until(lambda: not Message.objects.filter(queue__name="Q1").exists(), what="the messages got")
    raw.send(b"BEGIN\ntransaction:t\nreceipt:later\n\n\0")  # its RECEIPT goes behind what waits
    frames = [raw.next() for _ in range(8)]
    assert [f.command for f in frames].count("RECEIPT") == 2
    assert [f.body for f in frames if f.command == "MESSAGE"] == bodies
    assert frames[-1].get("receipt-id") == "later"
    raw.send(b"DISCONNECT\nreceipt:bye\n\n\0")
    assert raw.next().get("receipt-id") == "bye"
    raw.close()

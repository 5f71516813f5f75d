"""STOMP with the real client, stomp.py, against the server on TCP: every version, every
ack mode, NACK, prefetch, receipts, transactions as units of work, topics, heart-beats,
binary and large bodies."""

from __future__ import annotations

import pytest

from brokers.services.messages import message_browse, message_put
from brokers.services.message_input import MessageInput

from .conftest import Raw, bye, connected, until


def available(queue: str = "Q1") -> list[bytes]:
    return [bytes(m.body) for m in message_browse(broker="QM1", queue=queue).messages]


def put(*bodies: str, queue: str = "Q1") -> None:
    message_put(broker="QM1", queue=queue, messages=[MessageInput(body=b.encode()) for b in bodies])


@pytest.mark.parametrize("version", ["1.0", "1.1", "1.2"])
def test_every_version_sends_subscribes_and_acknowledges(stomp_port, stomp_broker, token, version):
    conn, seen = connected(stomp_port, token, version=version)
    conn.send("/queue/Q1", "hello", headers={"receipt": "r1", "colour": "blue", "priority": "7"})
    seen.wait(lambda: "r1" in seen.receipts)
    conn.subscribe("/queue/Q1", id="s1", ack="client")
    [m] = seen.wait_messages(1)
    assert (m.body, m.headers["colour"], m.headers["priority"], m.headers["destination"]) == (
        "hello",
        "blue",
        "7",
        "/queue/Q1",
    )
    assert available() == []  # locked while unacknowledged
    if version == "1.2":
        conn.ack(m.headers["ack"], receipt="r2")
    elif version == "1.1":
        conn.ack(m.headers["message-id"], "s1", receipt="r2")
    else:
        conn.ack(m.headers["message-id"], receipt="r2")
    seen.wait(lambda: "r2" in seen.receipts)
    bye(conn)
    assert available() == [] and seen.errors == []


def test_auto_ack_consumes_and_prefetch_bounds_what_is_unacknowledged(stomp_port, stomp_broker, token):
    put(*[f"m{i}" for i in range(5)])
    conn, seen = connected(stomp_port, token)
    conn.subscribe("/queue/Q1", id="s1", ack="client-individual", headers={"prefetch-count": "2"})
    first = seen.wait_messages(2)
    conn.send("/queue/Q1", "probe", receipt="r")  # a round trip: had a third come, it would be here
    seen.wait(lambda: "r" in seen.receipts)
    assert len(seen.messages) == 2
    conn.ack(first[1].headers["ack"])  # individual: the first stays unacknowledged
    seen.wait_messages(3)
    bye(conn)  # what was not acknowledged is available again
    assert sorted(available()) == [b"m0", b"m2", b"m3", b"m4", b"probe"]
    conn, seen = connected(stomp_port, token)
    conn.subscribe("/queue/Q1", id="auto", ack="auto")
    seen.wait_messages(5)
    bye(conn)
    assert available() == []


@pytest.mark.postgres
def test_client_ack_is_cumulative_and_nack_gives_back(stomp_port, stomp_broker, token):
    put("a", "b", "c")
    conn, seen = connected(stomp_port, token)
    conn.subscribe("/queue/Q1", id="s1", ack="client")
    _, b, c = seen.wait_messages(3)
    conn.ack(b.headers["ack"], receipt="r1")  # a and b
    seen.wait(lambda: "r1" in seen.receipts)
    conn.nack(c.headers["ack"], receipt="r2")
    [again] = seen.wait_messages(4)[3:]
    assert (again.body, again.headers.get("redelivered")) == ("c", "true")
    conn.ack(again.headers["ack"], receipt="r3")
    seen.wait(lambda: "r3" in seen.receipts)
    bye(conn)
    assert available() == []


@pytest.mark.postgres
def test_a_transaction_is_a_unit_of_work(stomp_port, stomp_broker, token):
    put("held")
    conn, seen = connected(stomp_port, token)
    conn.subscribe("/queue/Q1", id="s1", ack="client-individual")
    [m] = seen.wait_messages(1)
    conn.begin("t1")
    conn.send("/queue/Q1", "in t1", transaction="t1")
    conn.ack(m.headers["ack"], transaction="t1")
    conn.abort("t1", receipt="r1")
    seen.wait(lambda: "r1" in seen.receipts)
    # ABORT: its send vanished, and the message it acknowledged is delivered again
    [again] = seen.wait_messages(2)[1:]
    assert again.body == "held"
    conn.begin("t2")
    conn.send("/queue/Q1", "in t2", transaction="t2")
    conn.ack(again.headers["ack"], transaction="t2")
    conn.commit("t2", receipt="r2")
    seen.wait(lambda: "r2" in seen.receipts)
    [sent] = seen.wait_messages(3)[2:]
    assert sent.body == "in t2"
    conn.ack(sent.headers["ack"], receipt="r3")
    seen.wait(lambda: "r3" in seen.receipts)
    conn.begin("t3")  # left open: the disconnect rolls it back
    conn.send("/queue/Q1", "in t3", transaction="t3")
    bye(conn)
    assert available() == [] and seen.errors == []


def test_binary_and_4_mib_bodies(stomp_port, stomp_broker, token):
    conn, seen = connected(stomp_port, token, auto_decode=False)
    binary = bytes(range(256)) * 4 + b"\0\0"
    large = bytes(i % 251 for i in range(4 * 1024 * 1024 - 1024))
    conn.send("/queue/Q1", binary, headers={"content-type": "application/octet-stream"})
    conn.send("/queue/Q1", large, receipt="r")
    seen.wait(lambda: "r" in seen.receipts)
    conn.subscribe("/queue/Q1", id="s1", ack="auto")
    got = seen.wait_messages(2)
    assert [m.body for m in got] == [binary, large]
    assert got[0].headers["content-type"] == "application/octet-stream"
    bye(conn)


def test_topics_and_durable_subscriptions(stomp_port, stomp_broker, token):
    conn, seen = connected(stomp_port, token)
    conn.subscribe("/topic/sport/#", id="live", ack="auto")
    conn.subscribe(
        "/topic/news/+",
        id="keep",
        ack="client-individual",
        headers={"durable": "true", "auto-delete": "false"},
        receipt="r0",
    )
    seen.wait(lambda: "r0" in seen.receipts)
    conn.send("/topic/sport/tennis", "ace")
    conn.send("/topic/news/today", "first", receipt="r1")
    got = seen.wait_messages(2)
    assert sorted((m.body, m.headers["destination"]) for m in got) == [
        ("ace", "/topic/sport/tennis"),
        ("first", "/topic/news/today"),
    ]
    bye(conn)
    other, _ = connected(stomp_port, token)
    other.send("/topic/news/later", "while away", receipt="r")
    bye(other)
    conn, seen = connected(stomp_port, token)
    conn.subscribe("/topic/news/+", id="keep", ack="client-individual", headers={"durable": "true"})
    got = seen.wait_messages(2)  # the unacknowledged one again, and the one published while away
    assert sorted(m.body for m in got) == ["first", "while away"]
    conn.unsubscribe("keep", headers={"durable": "true"}, receipt="gone")
    seen.wait(lambda: "gone" in seen.receipts)
    bye(conn)
    from pubsub.models import Subscription

    assert not Subscription.objects.filter(name__startswith="stomp").exists()


def test_heart_beats_both_ways(stomp_port, stomp_broker, token, settings):
    settings.BATON_STOMP_HEARTBEAT_MS = 100
    # stomp.py gives the server's beats 1.5 times the interval: 400 ms leaves room on a busy machine
    conn, seen = connected(stomp_port, token, heartbeats=(400, 400))
    seen.wait(lambda: seen.heartbeats >= 2)
    conn.send("/queue/Q1", "alive", receipt="r")
    seen.wait(lambda: "r" in seen.receipts)
    bye(conn)
    # a client that promises heart-beats and sends none is disconnected
    raw = Raw(stomp_port)
    connected_frame = raw.connect(token, **{"heart-beat": "100,0"})
    assert connected_frame.get("heart-beat") == "0,100"  # the server sends none, wants them every 100 ms
    assert raw.closed_after() == []


def test_the_locks_of_unacknowledged_messages_are_renewed(stomp_port, stomp_broker, token):
    from brokers.models import Message
    from brokers.services.queues import queue_define

    queue_define(broker="QM1", name="SHORT", lock_duration_ms=300)
    put("slow", queue="SHORT")
    conn, seen = connected(stomp_port, token)
    conn.subscribe("/queue/SHORT", id="s", ack="client-individual", headers={"prefetch-count": "1"})
    [m] = seen.wait_messages(1)  # prefetch reached: the subscription waits for room, renewing meanwhile
    first = Message.objects.get(msg_id=m.headers["message-id"]).locked_until
    until(lambda: Message.objects.get(msg_id=m.headers["message-id"]).locked_until > first, what="a renewal")
    conn.ack(m.headers["ack"], receipt="r")  # after the first lock's end: still this client's
    seen.wait(lambda: "r" in seen.receipts)
    bye(conn)
    assert seen.errors == [] and available("SHORT") == []


def test_acks_sent_together_in_a_transaction_are_all_or_none(stomp_port, stomp_broker, token):
    put("a", "b", "c", "d")
    raw = Raw(stomp_port)
    raw.connect(token)
    raw.send(b"SUBSCRIBE\nid:s1\ndestination:/queue/Q1\nack:client-individual\n\n\0")
    acks = [raw.next().get("ack") for _ in range(4)]
    frames = [f"ACK\nid:{ack}\ntransaction:t1\n\n\0" for ack in acks[:3]]
    raw.send(b"BEGIN\ntransaction:t1\n\n\0" + "".join(frames).encode() + b"COMMIT\ntransaction:t1\nreceipt:r1\n\n\0")
    assert raw.next().command == "RECEIPT"
    assert available() == []  # d is still locked by this connection
    # the same ACK twice, sent together: ERROR, and nothing of the transaction stays
    raw.send(
        f"BEGIN\ntransaction:t2\n\n\0ACK\nid:{acks[3]}\ntransaction:t2\n\n\0"
        f"ACK\nid:{acks[3]}\ntransaction:t2\nreceipt:r2\n\n\0COMMIT\ntransaction:t2\n\n\0".encode()
    )
    [error] = [f for f in raw.closed_after() if f.command == "ERROR"]
    assert "already acknowledged" in error.body.decode()
    raw.close()
    until(lambda: available() == [b"d"], what="d given back")

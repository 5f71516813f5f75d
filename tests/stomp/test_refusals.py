"""Bad input on STOMP: ERROR with a clear message (and receipt-id when asked), the connection
closed, nothing half-applied, the server unharmed."""

from __future__ import annotations

import pytest

from brokers.services.message_input import MessageInput
from brokers.services.messages import message_browse, message_put
from transactions.models import Transaction

from .conftest import Raw, bye, connected, until


def available(queue: str = "Q1") -> list[bytes]:
    return [bytes(m.body) for m in message_browse(broker="QM1", queue=queue).messages]


def refused(raw: Raw, frames: bytes) -> object:
    """Send ``frames``; the server's last word is one ERROR, then it closes."""
    raw.send(frames)
    got = raw.closed_after()
    assert got and got[-1].command == "ERROR", [(f.command, f.headers) for f in got]
    assert all(f.command != "ERROR" for f in got[:-1])
    return got[-1]


BAD_FRAMES = [
    (b"SEND\ndestination:/nowhere/x\nreceipt:r9\n\nx\0", "Unknown destination"),
    (b"SEND\ndestination:/queue/NOPE\n\nx\0", "No queue 'NOPE'"),
    (b"SUBSCRIBE\ndestination:/queue/Q1\n\n\0", "SUBSCRIBE needs an id header"),
    (b"ACK\nid:42\n\n\0", "unknown or already acknowledged"),
    (b"ACK\n\n\0", "ACK needs the id header"),
    (b"BEGIN\ntransaction:t\n\n\0BEGIN\ntransaction:t\n\n\0", "already open"),
    (b"COMMIT\ntransaction:never\n\n\0", "No transaction 'never'"),
    (b"SEND\ndestination:/queue/Q1\ntransaction:never\n\nx\0", "No transaction 'never'"),
    (b"SEND\ndestination:/queue/Q1\npriority:high\n\nx\0", "priority"),
    (b"SUBSCRIBE\nid:1\ndestination:/queue/Q1\nack:sometimes\n\n\0", "ack must be"),
    (b"SEND\ndestination:/queue/Q1\ncontent-length:99999999999\n\n\0", "larger than"),
    (b"HELLO\n\n\0", "Unknown command"),
    (b"MESSAGE\n\n\0", "a frame the server sends"),
]


def test_bad_frames_get_error_then_close_and_change_nothing(stomp_port, stomp_broker, token):
    """Each on a connection of its own (one database for all: a test each would cost more
    than the frames)."""
    for frames, message in BAD_FRAMES:
        raw = Raw(stomp_port)
        raw.connect(token)
        raw.send(b"BEGIN\ntransaction:open\n\n\0SEND\ndestination:/queue/Q1\ntransaction:open\n\nuncommitted\0")
        error = refused(raw, frames)
        assert message in error.get("message") + error.body.decode(), (frames, error.headers, error.body)
        if b"receipt:r9" in frames:
            assert error.get("receipt-id") == "r9"
        until(
            lambda: not Transaction.objects.filter(state="active").exists(),
            what=f"the open transaction rolled back after {frames!r}",
        )
        assert available() == [], frames
    conn, _ = connected(stomp_port, token)  # the server is unharmed
    bye(conn)


def test_acknowledging_twice_and_after_an_abort(stomp_port, stomp_broker, token):
    message_put(broker="QM1", queue="Q1", messages=[MessageInput(body=b"one")])
    raw = Raw(stomp_port)
    raw.connect(token)
    raw.send(b"SUBSCRIBE\nid:s\ndestination:/queue/Q1\nack:client-individual\n\n\0")
    m = raw.next()
    ack = m.get("ack").encode()
    raw.send(b"ACK\nid:" + ack + b"\nreceipt:1\n\n\0")
    assert raw.next().get("receipt-id") == "1"
    error = refused(raw, b"ACK\nid:" + ack + b"\n\n\0")
    assert "already acknowledged" in error.get("message")
    assert available() == []


def test_a_frame_over_the_size_limit(stomp_port, stomp_broker, token, settings):
    settings.BATON_STOMP_MAX_FRAME = 1000
    raw = Raw(stomp_port)
    raw.connect(token)
    error = refused(raw, b"SEND\ndestination:/queue/Q1\n\n" + b"x" * 2000)  # no NUL yet: refused on sight
    assert error.get("x-baton-code") == "message_too_large"
    assert available() == []


def test_bad_login_and_unknown_broker(stomp_port, stomp_broker, token):
    raw = Raw(stomp_port)
    error = refused(raw, b"CONNECT\naccept-version:1.2\nlogin:tester\npasscode:wrong\n\n\0")
    assert error.get("x-baton-code") == "not_authenticated"
    raw = Raw(stomp_port)
    error = refused(raw, f"CONNECT\naccept-version:1.2\nhost:NOSUCH\nlogin:tester\npasscode:{token}\n\n\0".encode())
    assert "NOSUCH" in error.get("message")
    raw = Raw(stomp_port)
    error = refused(raw, f"CONNECT\naccept-version:2.0\nlogin:tester\npasscode:{token}\n\n\0".encode())
    assert error.get("version") == "1.0,1.1,1.2"


@pytest.mark.postgres
def test_a_connection_that_ends_rolls_back_and_gives_back(stomp_port, stomp_broker, token):
    message_put(broker="QM1", queue="Q1", messages=[MessageInput(body=b"kept")])
    raw = Raw(stomp_port)
    raw.connect(token)
    raw.send(b"SUBSCRIBE\nid:s\ndestination:/queue/Q1\nack:client\n\n\0")
    m = raw.next()
    raw.send(
        b"BEGIN\ntransaction:t\n\n\0SEND\ndestination:/queue/Q1\ntransaction:t\n\nlost\0"
        b"ACK\ntransaction:t\nid:" + m.get("ack").encode() + b"\nreceipt:acked\n\n\0"
    )
    assert raw.next().get("receipt-id") == "acked"
    raw.close()  # no DISCONNECT
    until(lambda: available() == [b"kept"], what="the message given back")
    assert not Transaction.objects.filter(state="active").exists()


def test_a_client_that_stops_reading_is_disconnected_and_its_messages_given_back(
    stomp_port, stomp_broker, token, settings
):
    settings.BATON_STOMP_SEND_TIMEOUT_S = 0.3
    big = b"x" * (1024 * 1024)
    message_put(broker="QM1", queue="Q1", messages=[MessageInput(body=big) for _ in range(8)])
    raw = Raw(stomp_port, rcvbuf=4096)
    raw.connect(token)
    raw.send(b"SUBSCRIBE\nid:s\ndestination:/queue/Q1\nack:client-individual\n\n\0")  # and never read
    until(lambda: len(available()) < 8, what="messages sent")
    until(lambda: len(available()) == 8, what="the connection closed and its messages given back")
    conn, _ = connected(stomp_port, token)  # the server is unharmed
    bye(conn)


def test_pipelined_sends_in_a_transaction_keep_their_order_and_fail_whole(stomp_port, stomp_broker, token):
    raw = Raw(stomp_port)
    raw.connect(token)
    sends = b"".join(b"SEND\ndestination:/queue/Q1\ntransaction:t\nn:%d\n\nm%d\0" % (i, i) for i in range(30))
    raw.send(b"BEGIN\ntransaction:t\n\n\0" + sends + b"COMMIT\ntransaction:t\nreceipt:c\n\n\0")
    assert raw.next().get("receipt-id") == "c"
    assert available() == [b"m%d" % i for i in range(30)]
    bad = sends.replace(b"transaction:t", b"transaction:u").replace(b"n:17\n", b"priority:high\n")
    error = refused(raw, b"BEGIN\ntransaction:u\n\n\0" + bad + b"COMMIT\ntransaction:u\nreceipt:d\n\n\0")
    assert "priority" in error.get("message")
    until(lambda: not Transaction.objects.filter(state="active").exists(), what="the transaction rolled back")
    assert len(available()) == 30


def test_the_connections_user_is_held_to_its_grants(stomp_port, stomp_broker):
    from brokers.services.access import api_token_issue, grant_actions

    producer = api_token_issue(username="producer", create_user=True)
    raw = Raw(stomp_port)
    error = refused(raw, f"CONNECT\naccept-version:1.2\nhost:QM1\nlogin:producer\npasscode:{producer}\n\n\0".encode())
    assert error.get("x-baton-code") == "permission_denied"  # no grant on the broker at all
    grant_actions(username="producer", broker="QM1", queue="Q1", actions=["put"])
    raw = Raw(stomp_port)
    raw.send(f"CONNECT\naccept-version:1.2\nlogin:producer\npasscode:{producer}\n\n\0".encode())  # its one broker
    assert raw.next().command == "CONNECTED"
    raw.send(b"SEND\ndestination:/queue/Q1\nreceipt:1\n\nok\0")
    assert raw.next().get("receipt-id") == "1"
    for frame in (b"SUBSCRIBE\nid:1\ndestination:/queue/Q1\n\n\0", b"SUBSCRIBE\nid:1\ndestination:/topic/a\n\n\0"):
        error = refused(raw, frame)
        assert error.get("x-baton-code") == "permission_denied", frame
        raw = Raw(stomp_port)
        raw.send(f"CONNECT\naccept-version:1.2\nlogin:producer\npasscode:{producer}\n\n\0".encode())
        assert raw.next().command == "CONNECTED"
    assert available() == [b"ok"]


def test_a_destination_the_broker_would_define_is_named_as_rest_requires(stomp_port, stomp_broker, token):
    """With ``auto_define_queues`` a destination's name comes from the client: a name REST
    would refuse gets ERROR and no queue."""
    from brokers.models import Queue
    from brokers.services.brokers import broker_alter

    broker_alter(name="QM1", auto_define_queues=True)
    for name in ("a/..", "x" * 49, "has space"):
        raw = Raw(stomp_port)
        raw.connect(token)
        error = refused(raw, f"SEND\ndestination:/queue/{name}\n\nx\0".encode())
        assert "not valid" in (error.get("message") + error.body.decode()), (name, error.headers, error.body)
        assert not Queue.objects.filter(broker__name="QM1", name=name).exists(), name
    raw = Raw(stomp_port)
    raw.connect(token)
    raw.send(b"SEND\ndestination:/queue/MADE\nreceipt:r1\n\nx\0")
    assert raw.next().command == "RECEIPT"
    raw.close()
    assert available("MADE") == [b"x"]


def test_a_client_that_sends_faster_than_its_frames_are_applied_is_read_later_not_dropped(
    stomp_port, stomp_broker, token, settings
):
    """More frames than a connection holds unapplied (BATON_STOMP_MAX_PENDING): the server
    stops reading the socket until its thread catches up, then reads on; nothing is lost
    or reordered."""
    settings.BATON_STOMP_MAX_PENDING = 4
    raw = Raw(stomp_port)
    raw.connect(token)
    sends = b"".join(b"SEND\ndestination:/queue/Q1\n\nm%d\0" % i for i in range(40))
    raw.send(sends + b"SEND\ndestination:/queue/Q1\nreceipt:last\n\nm40\0")
    assert raw.next().get("receipt-id") == "last"
    assert available() == [b"m%d" % i for i in range(41)]
    raw.send(b"DISCONNECT\nreceipt:bye\n\n\0")
    assert raw.next().get("receipt-id") == "bye"

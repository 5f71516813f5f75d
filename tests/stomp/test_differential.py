"""The differential STOMP suite: each scenario is one piece of test code run against RabbitMQ's
STOMP adapter (Debian's rabbitmq-server 3.10 with rabbitmq_stomp, started once per test
session on loopback: tests/support/rabbitmqserver.py) and against Baton's STOMP server, with the same
assertions on the frames and outcomes each observes. Where Baton deliberately differs, the
test says so and asserts each side's behaviour (docs/stomp.md, "Compared with RabbitMQ").

Queues are fresh per test (a hyphenated name, as RabbitMQ users write them); Baton's broker
defines them on first use (``auto_define_queues``), as RabbitMQ does."""

from __future__ import annotations

import socket
import time
import uuid
from dataclasses import dataclass

import pytest
import stomp

from brokers.services.brokers import broker_alter
from stomp_server.frames import Frame, FrameParser

from .conftest import Listener
from tests.support.rabbitmqserver import rabbitmq_node

#: Both peers run on the test database's session (Baton's server is in this process).
pytestmark = pytest.mark.django_db(transaction=True)
TIMEOUT_S = 20
#: How long a test waits to see that nothing (more) arrives.
QUIET_S = 0.5


@pytest.fixture(scope="session")
def rabbitmq_port():
    with rabbitmq_node(stomp=True) as node:
        yield node.stomp_port


class Wire:
    """A plain socket speaking STOMP: exactly what the server sends, frame by frame."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT_S)
        self.parser = FrameParser(max_frame=64 * 1024 * 1024, version="1.2")
        self.frames: list[Frame] = []
        self.raw = b""  # every byte received

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def _read(self, timeout: float) -> bool:
        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(1 << 20)
        except TimeoutError:
            return False
        if not data:
            raise EOFError("the server closed the connection")
        self.raw += data
        self.frames.extend(self.parser.feed(data))
        return True

    def next(self, timeout: float = TIMEOUT_S) -> Frame:
        deadline = time.monotonic() + timeout
        while not self.frames:
            left = deadline - time.monotonic()
            assert left > 0, "no frame came"
            self._read(left)
        return self.frames.pop(0)

    def expect(self, command: str, receipt_id: str | None = None) -> Frame:
        """The first ``command`` frame (the others stay, in order: a MESSAGE and a RECEIPT
        asked for at about the same time may come in either order)."""
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            for n, frame in enumerate(self.frames):
                assert frame.command != "ERROR", (frame.headers, frame.body[:500])
                if frame.command == command and (receipt_id is None or frame.get("receipt-id") == receipt_id):
                    return self.frames.pop(n)
            left = deadline - time.monotonic()
            assert left > 0, f"no {command} came; got {[(f.command, f.headers) for f in self.frames]}"
            self._read(left)

    def receipt(self, rid: str) -> None:
        self.expect("RECEIPT", rid)

    def quiet(self, seconds: float = QUIET_S) -> list[Frame]:
        """The frames that come within ``seconds`` (a bounded wait for nothing more)."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            self._read(left)
        got, self.frames = self.frames, []
        return got

    def closed(self, timeout: float = TIMEOUT_S) -> bool:
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline:
                self._read(deadline - time.monotonic())
        except (EOFError, ConnectionResetError):
            return True
        return False

    def close(self) -> None:
        self.sock.close()


@dataclass
class Peer:
    name: str
    port: int
    login: str
    passcode: str
    host: str

    def connect(self, version: str = "1.2", **headers: str) -> tuple[Wire, Frame]:
        wire = Wire(self.port)
        accept = "" if version == "1.0" else f"accept-version:{version}\n"
        extra = "".join(f"{k}:{v}\n" for k, v in headers.items())
        wire.send(
            f"CONNECT\n{accept}host:{self.host}\nlogin:{self.login}\npasscode:{self.passcode}\n{extra}\n\0".encode()
        )
        return wire, wire.expect("CONNECTED")

    def stomp_py(self, version: str = "1.2"):
        cls = {"1.0": stomp.Connection10, "1.1": stomp.Connection11, "1.2": stomp.Connection12}[version]
        conn = cls([("127.0.0.1", self.port)], vhost=self.host)
        listener = Listener()
        conn.set_listener("", listener)
        conn.connect(self.login, self.passcode, wait=True)
        return conn, listener


#: RabbitMQ's half does not depend on Baton's database: run in the SQLite pass only.
@pytest.fixture(params=[pytest.param("rabbitmq", marks=pytest.mark.once), "baton"])
def peer(request, settings):
    if request.param == "rabbitmq":
        return Peer("rabbitmq", request.getfixturevalue("rabbitmq_port"), "guest", "guest", "/")
    port = request.getfixturevalue("stomp_port")
    request.getfixturevalue("stomp_broker")
    broker_alter(name="QM1", auto_define_queues=True)
    settings.BATON_STOMP_HEARTBEAT_MS = 500  # the interval it offers (RabbitMQ takes the client's)
    return Peer("baton", port, "tester", request.getfixturevalue("token"), "QM1")


def fresh() -> str:
    return f"/queue/diff-{uuid.uuid4().hex[:10]}"


def send(wire: Wire, destination: str, body: bytes, rid: str, *, wait: bool = True, **headers: str) -> None:
    extra = "".join(f"{k}:{v}\n" for k, v in headers.items())
    wire.send(
        f"SEND\ndestination:{destination}\ncontent-length:{len(body)}\n{extra}receipt:{rid}\n\n".encode() + body + b"\0"
    )
    if wait:
        wire.receipt(rid)


def subscribe(wire: Wire, destination: str, sid: str = "s1", ack: str = "auto", **headers: str) -> None:
    extra = "".join(f"{k}:{v}\n" for k, v in headers.items())
    wire.send(f"SUBSCRIBE\nid:{sid}\ndestination:{destination}\nack:{ack}\n{extra}receipt:sub-{sid}\n\n\0".encode())
    wire.receipt(f"sub-{sid}")


def ack(wire: Wire, message: Frame, rid: str, command: str = "ACK", **headers: str) -> None:
    extra = "".join(f"{k}:{v}\n" for k, v in headers.items())
    wire.send(f"{command}\nid:{message.get('ack')}\n{extra}receipt:{rid}\n\n\0".encode())
    wire.receipt(rid)


def bye(wire: Wire) -> None:
    wire.send(b"DISCONNECT\nreceipt:bye\n\n\0")
    wire.receipt("bye")
    wire.close()


def first_delivery(frame: Frame) -> bool:
    return frame.get("redelivered", "false") == "false"


# --- connecting ------------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["1.0", "1.1", "1.2"])
def test_connected_headers(peer, version):
    wire, connected = peer.connect(version)
    assert connected.get("version") == version
    beats = connected.get("heart-beat")  # on every version, 1.0 included: clients read it
    assert beats is not None and all(part.isdigit() for part in beats.split(","))
    assert connected.get("server") and connected.get("session")
    bye(wire)


def test_heart_beats_both_ways(peer):
    wire, connected = peer.connect(**{"heart-beat": "500,500"})
    send_ms, expect_ms = (int(x) for x in connected.get("heart-beat").split(","))
    assert send_ms > 0 and expect_ms > 0
    # the server's beats: EOLs, with no frame, within its interval (and a margin)
    before = len(wire.raw)
    deadline = time.monotonic() + 3 * send_ms / 1000 + 1
    while b"\n" not in wire.raw[before:]:
        assert time.monotonic() < deadline, "no heart-beat from the server"
        wire._read(deadline - time.monotonic())
    assert not wire.frames
    # a client that beats stays connected for several of the server's intervals ...
    until = time.monotonic() + 3 * expect_ms / 1000
    while time.monotonic() < until:
        wire.send(b"\n")
        time.sleep(expect_ms / 4000)  # the client's own pace of heart-beats
    send(wire, fresh(), b"alive", "r-alive")
    # ... and one that stops is disconnected
    assert wire.closed(timeout=4 * expect_ms / 1000 + 10)


# --- acknowledgements -------------------------------------------------------------------------


def test_ack_auto(peer):
    queue = fresh()
    wire, _ = peer.connect()
    for n in range(2):
        send(wire, queue, f"m{n}".encode(), f"r{n}")
    subscribe(wire, queue, ack="auto")
    got = [wire.expect("MESSAGE") for _ in range(2)]
    assert [f.body for f in got] == [b"m0", b"m1"] and all(first_delivery(f) for f in got)
    bye(wire)
    again, _ = peer.connect()
    send(again, queue, b"marker", "rm")
    subscribe(again, queue, ack="client-individual")
    assert again.expect("MESSAGE").body == b"marker"  # the auto-acknowledged ones are gone
    bye(again)


def _three(peer, ack_mode: str) -> tuple[str, Wire, list[Frame]]:
    queue = fresh()
    wire, _ = peer.connect()
    for n in range(3):
        send(wire, queue, f"m{n}".encode(), f"r{n}")
    subscribe(wire, queue, ack=ack_mode)
    return queue, wire, [wire.expect("MESSAGE") for _ in range(3)]


def _redelivered(peer, queue: str, n: int) -> list[Frame]:
    """Connect again: the first ``n`` messages, which must be redeliveries, then a marker."""
    wire, _ = peer.connect()
    send(wire, queue, b"marker", "rm")
    subscribe(wire, queue, ack="client-individual")
    got = [wire.expect("MESSAGE") for _ in range(n + 1)]
    bye(wire)
    assert got[-1].body == b"marker"
    assert all(f.get("redelivered") == "true" for f in got[:-1]), [f.headers for f in got]
    return got[:-1]


def test_ack_client_is_cumulative(peer):
    queue, wire, got = _three(peer, "client")
    ack(wire, got[1], "ra")  # m0 and m1
    bye(wire)
    assert [f.body for f in _redelivered(peer, queue, 1)] == [b"m2"]


def test_ack_client_individual_is_not(peer):
    queue, wire, got = _three(peer, "client-individual")
    ack(wire, got[1], "ra")  # m1 only
    bye(wire)
    assert [f.body for f in _redelivered(peer, queue, 2)] == [b"m0", b"m2"]


def test_nack_requeues_and_redelivers(peer):
    queue = fresh()
    wire, _ = peer.connect()
    send(wire, queue, b"m0", "r0")
    subscribe(wire, queue, ack="client-individual")
    first = wire.expect("MESSAGE")
    assert first_delivery(first)
    ack(wire, first, "rn", command="NACK")
    again = wire.expect("MESSAGE")
    assert again.body == b"m0" and again.get("redelivered") == "true"
    ack(wire, again, "ra")
    bye(wire)


def test_nack_without_requeue_does_not_redeliver(peer):
    """RabbitMQ drops it (or dead-letters it when the queue has a dead-letter exchange);
    Baton moves it to the broker's dead-letter queue, which every Baton broker has."""
    queue = fresh()
    wire, _ = peer.connect()
    send(wire, queue, b"m0", "r0")
    subscribe(wire, queue, ack="client-individual")
    ack(wire, wire.expect("MESSAGE"), "rn", command="NACK", requeue="false")
    send(wire, queue, b"marker", "rm")
    assert wire.expect("MESSAGE").body == b"marker"
    bye(wire)
    if peer.name == "baton":
        from brokers.models import Broker
        from brokers.services.messages import message_browse

        dlq = Broker.objects.get(name="QM1").dead_letter_queue
        assert [bytes(m.body) for m in message_browse(broker="QM1", queue=dlq).messages] == [b"m0"]


@pytest.mark.parametrize("kind", ["queue", "topic"])
def test_prefetch_count(peer, kind):
    destination = fresh() if kind == "queue" else f"/topic/diff.{uuid.uuid4().hex[:10]}"
    wire, _ = peer.connect()
    subscribe(wire, destination, ack="client-individual", **{"prefetch-count": "1"})
    for n in range(3):
        send(wire, destination, f"m{n}".encode(), f"r{n}")
    first = wire.expect("MESSAGE")
    assert first.body == b"m0"
    assert wire.quiet() == []  # no more than prefetch-count unacknowledged
    ack(wire, first, "ra")
    assert wire.expect("MESSAGE").body == b"m1"
    bye(wire)


@pytest.mark.parametrize("version", ["1.0", "1.1", "1.2"])
def test_message_id_and_ack_per_version(peer, version):
    queue = fresh()
    wire, _ = peer.connect(version)
    send(wire, queue, b"m0", "r0")
    wire.send(f"SUBSCRIBE\nid:s1\ndestination:{queue}\nack:client\nreceipt:rs\n\n\0".encode())
    wire.receipt("rs")
    message = wire.expect("MESSAGE")
    assert message.get("message-id") and message.get("subscription") == "s1" and message.get("destination") == queue
    if version == "1.2":
        assert message.get("ack")
        wire.send(f"ACK\nid:{message.get('ack')}\nreceipt:ra\n\n\0".encode())
    elif version == "1.1":
        wire.send(f"ACK\nmessage-id:{message.get('message-id')}\nsubscription:s1\nreceipt:ra\n\n\0".encode())
    else:
        wire.send(f"ACK\nmessage-id:{message.get('message-id')}\nreceipt:ra\n\n\0".encode())
    wire.receipt("ra")
    bye(wire)
    again, _ = peer.connect()
    send(again, queue, b"marker", "rm")
    subscribe(again, queue, ack="client-individual")
    assert again.expect("MESSAGE").body == b"marker"  # acknowledged: gone
    bye(again)


def test_unsubscribe_gives_unacknowledged_messages_back(peer):
    """Deliberately sooner on Baton: UNSUBSCRIBE gives the subscription's unacknowledged
    messages back at once (another subscription, of this connection or another, gets them);
    RabbitMQ 3.10 keeps them unacknowledged on the connection until it ends. Either way
    they are not lost: redelivered once the connection has gone."""
    queue = fresh()
    wire, _ = peer.connect()
    send(wire, queue, b"m0", "r0")
    subscribe(wire, queue, "s1", ack="client-individual")
    assert wire.expect("MESSAGE").body == b"m0"
    wire.send(b"UNSUBSCRIBE\nid:s1\nreceipt:ru\n\n\0")
    wire.receipt("ru")
    subscribe(wire, queue, "s2", ack="client-individual")
    if peer.name == "baton":
        again = wire.expect("MESSAGE")
        assert again.body == b"m0" and again.get("redelivered") == "true" and again.get("subscription") == "s2"
    else:
        assert wire.quiet() == []
    wire.send(b"UNSUBSCRIBE\nid:s2\nreceipt:ru2\n\n\0")
    wire.receipt("ru2")
    bye(wire)
    assert [f.body for f in _redelivered(peer, queue, 1)] == [b"m0"]


# --- receipts and transactions ----------------------------------------------------------------


def test_receipts_on_every_frame(peer):
    queue = fresh()
    wire, _ = peer.connect()
    subscribe(wire, queue, ack="client-individual")
    send(wire, queue, b"m0", "r-send")
    ack(wire, wire.expect("MESSAGE"), "r-nack", command="NACK")
    ack(wire, wire.expect("MESSAGE"), "r-ack")
    for command, rid in (("BEGIN", "r-begin"), ("COMMIT", "r-commit"), ("BEGIN", "r-begin2"), ("ABORT", "r-abort")):
        wire.send(f"{command}\ntransaction:t\nreceipt:{rid}\n\n\0".encode())
        wire.receipt(rid)
    wire.send(b"UNSUBSCRIBE\nid:s1\nreceipt:r-unsub\n\n\0")
    wire.receipt("r-unsub")
    bye(wire)  # DISCONNECT's receipt


def test_transaction_sends_appear_at_commit_and_vanish_at_abort(peer):
    queue = fresh()
    wire, _ = peer.connect()
    wire.send(b"BEGIN\ntransaction:t1\n\n\0")
    # a SEND's RECEIPT under a transaction: Baton's comes at once, RabbitMQ's with the COMMIT's
    send(wire, queue, b"in-t1", "r1", wait=False, transaction="t1")
    send(wire, queue, b"outside", "r2")
    subscribe(wire, queue, ack="client-individual")
    outside = wire.expect("MESSAGE")
    assert outside.body == b"outside"  # the uncommitted send is not there yet
    wire.send(b"COMMIT\ntransaction:t1\nreceipt:rc\n\n\0")
    wire.receipt("rc")
    wire.receipt("r1")
    assert wire.expect("MESSAGE").body == b"in-t1"
    wire.send(b"BEGIN\ntransaction:t2\n\n\0")
    send(wire, queue, b"in-t2", "r3", wait=False, transaction="t2")
    wire.send(b"ABORT\ntransaction:t2\nreceipt:rab\n\n\0")
    wire.receipt("rab")
    if peer.name == "baton":  # RabbitMQ answers a transaction's SEND at COMMIT, never after ABORT
        wire.receipt("r3")
    send(wire, queue, b"marker", "rm")
    assert wire.expect("MESSAGE").body == b"marker"  # the aborted send vanished
    bye(wire)


def test_abort_of_an_acknowledgement(peer):
    """Deliberately different: Baton's transaction is a unit of work, so ABORT gives back
    what it acknowledged (the message comes again, redelivered); RabbitMQ drops the ACK and
    leaves the message unacknowledged, stuck until the connection ends (docs/stomp.md)."""
    queue = fresh()
    wire, _ = peer.connect()
    send(wire, queue, b"m0", "r0")
    subscribe(wire, queue, ack="client-individual")
    message = wire.expect("MESSAGE")
    wire.send(b"BEGIN\ntransaction:t\n\n\0")
    ack(wire, message, "ra", transaction="t")
    wire.send(b"ABORT\ntransaction:t\nreceipt:rab\n\n\0")
    wire.receipt("rab")
    if peer.name == "baton":
        again = wire.expect("MESSAGE")
        assert again.body == b"m0" and again.get("redelivered") == "true"
    else:
        assert wire.quiet() == []  # still held, unacknowledged
    bye(wire)
    assert [f.body for f in _redelivered(peer, queue, 1)] == [b"m0"]  # either way not consumed


# --- the wire ---------------------------------------------------------------------------------


def test_a_frame_split_at_every_byte(peer):
    queue = fresh()
    wire, _ = peer.connect()
    frame = f"SEND\ndestination:{queue}\ncontent-length:5\nreceipt:rs\n\nsplit\0".encode()
    for n in range(len(frame)):
        wire.send(frame[n : n + 1])
    wire.receipt("rs")
    subscribe(wire, queue)
    assert wire.expect("MESSAGE").body == b"split"
    bye(wire)


def test_content_length_bodies_hold_nuls(peer):
    queue = fresh()
    wire, _ = peer.connect()
    body = b"a\0b\0\0c"
    send(wire, queue, body, "r0")
    subscribe(wire, queue)
    message = wire.expect("MESSAGE")
    assert message.body == body and message.get("content-length") == str(len(body))
    bye(wire)


def test_eols_between_frames_and_crlf_line_ends(peer):
    queue = fresh()
    wire, _ = peer.connect()
    wire.send(
        f"SEND\ndestination:{queue}\nreceipt:r1\n\none\0\n\n\r\n".encode()
        + f"SEND\r\ndestination:{queue}\r\nreceipt:r2\r\n\r\ntwo\0\r\n".encode()
    )
    wire.receipt("r1")
    wire.receipt("r2")
    subscribe(wire, queue)
    got = [wire.expect("MESSAGE") for _ in range(2)]
    assert [f.body for f in got] == [b"one", b"two"]
    assert all(f.get("destination") == queue for f in got)  # no \r left in a value
    bye(wire)


# --- stomp.py, as users run it ---------------------------------------------------------------


def test_stomp_py_client_acknowledgement_and_transactions(peer):
    queue = fresh()
    conn, listener = peer.stomp_py()
    conn.subscribe(queue, id="1", ack="client-individual")
    txn = conn.begin()
    for n in range(3):
        conn.send(queue, f"m{n}", transaction=txn)
    conn.send(queue, "outside", receipt="r-out")
    listener.wait(lambda: listener.messages)
    assert listener.messages[0].body == "outside"
    conn.commit(txn)
    got = listener.wait_messages(4)
    assert [m.body for m in got] == ["outside", "m0", "m1", "m2"]
    for message in got:
        conn.ack(message.headers["ack"], receipt=f"a-{message.body}")
    listener.wait(lambda: "a-m2" in listener.receipts)
    assert not listener.errors
    conn.disconnect(receipt="bye")

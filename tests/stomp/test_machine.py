"""The STOMP protocol's state machine (stomp_server/machine.py) driven with frames, no
sockets and no database: what each frame asks of the engine, and the frames it sends."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from baton_client.errors import BatonError
from stomp_server.frames import Frame, frame_encode
from stomp_server.machine import (
    Ack,
    Begin,
    Close,
    Commit,
    Disconnect,
    Heartbeats,
    Nack,
    Put,
    Send,
    SignIn,
    State,
    StompMachine,
    Subscribe,
    Unsubscribe,
)

pytestmark = pytest.mark.once


@dataclass
class Got:
    """A message as a get returns it (the attributes a MESSAGE frame is written from)."""

    msg_id: str
    lock_token: str | None = "token"
    body: bytes = b"hello"
    properties: dict | None = None
    format: str = ""
    correl_id: str | None = None
    reply_to_queue: str | None = None
    priority: int = 4
    persistent: bool = True
    expires_at: None = None
    delivery_count: int = 1


def frame(command: str, body: bytes = b"", **headers: str) -> Frame:
    return Frame(command, [(k.replace("_", "-"), v) for k, v in headers.items()], body)


def sent(actions) -> list[Frame]:
    return [a.frame for a in actions if isinstance(a, Send)]


def connected(version: str = "1.2", **kwargs) -> StompMachine:
    machine = StompMachine(session="s1", heartbeat_ms=10_000, **kwargs)
    [sign_in] = machine.frame_received(frame("CONNECT", accept_version=version, login="u", passcode="p"))
    machine.signed_in(sign_in.frame)
    return machine


def subscribed(machine: StompMachine, sub_id: str = "1", **headers: str) -> Subscribe:
    [action] = machine.frame_received(frame("SUBSCRIBE", id=sub_id, destination="/queue/q", **headers))
    assert isinstance(action, Subscribe)
    machine.subscribed(action.sub)
    return action


def test_connect_asks_to_sign_in_then_answers_connected_with_its_headers():
    machine = StompMachine(session="s1", heartbeat_ms=10_000)
    assert machine.state is State.AWAITING_CONNECT
    [action] = machine.frame_received(
        frame("CONNECT", accept_version="1.0,1.1,1.2", host="b", login="ann", passcode="pw", heart_beat="5000,20000")
    )
    assert isinstance(action, SignIn) and (action.login, action.passcode, action.host) == ("ann", "pw", "b")
    assert machine.version == "1.2" and machine.state is State.AWAITING_CONNECT
    actions = machine.signed_in(action.frame)
    [connected_frame] = sent(actions)
    assert connected_frame.command == "CONNECTED"
    assert connected_frame.as_dict() == {
        "version": "1.2",
        "server": "Baton/0.1",
        "session": "s1",
        "heart-beat": "10000,10000",
    }
    # the server beats every max(its 10 s, the 20 s the client wants); the client's within max(10, 5) s
    assert Heartbeats(send_ms=20_000, receive_ms=10_000) in actions
    assert machine.state is State.CONNECTED


def test_stomp_1_0_connected_carries_heart_beat_0_0():
    machine = StompMachine(session="s1", heartbeat_ms=10_000)
    [action] = machine.frame_received(frame("CONNECT", login="u", passcode="p", heart_beat="1000,1000"))
    actions = machine.signed_in(action.frame)
    assert machine.version == "1.0" and sent(actions)[0].get("heart-beat") == "0,0"
    assert not [a for a in actions if isinstance(a, Heartbeats)]


def test_no_common_version_is_an_error_naming_the_versions_then_close():
    machine = StompMachine(session="s1")
    actions = machine.frame_received(frame("CONNECT", accept_version="2.0"))
    [error] = sent(actions)
    assert error.command == "ERROR" and error.get("version") == "1.0,1.1,1.2"
    assert isinstance(actions[-1], Close) and machine.state is State.FAILED
    assert machine.frame_received(frame("CONNECT", accept_version="1.2")) == []  # dropped after ERROR


def test_a_frame_before_connect_is_refused_with_its_receipt_id():
    machine = StompMachine(session="s1")
    actions = machine.frame_received(frame("SEND", destination="/queue/q", receipt="r1"))
    [error] = sent(actions)
    assert error.get("receipt-id") == "r1" and error.get("x-baton-code") == "not_authenticated"
    assert b"(refused frame: SEND)" in error.body


@pytest.mark.parametrize(
    "headers, why",
    [
        ({"heart_beat": "x,1"}, "heart-beat"),
        ({"heart_beat": "1"}, "heart-beat"),
    ],
)
def test_bad_connect_headers(headers, why):
    machine = StompMachine(session="s1", heartbeat_ms=1000)
    [error] = sent(machine.frame_received(frame("CONNECT", accept_version="1.2", **headers)))
    assert why in error.body.decode()


def test_connect_twice_is_refused():
    machine = connected()
    [error] = sent(machine.frame_received(frame("CONNECT", accept_version="1.2")))
    assert error.get("message") == "Already connected."


def test_send_is_a_put_with_its_fields_and_its_receipt_once_done():
    machine = connected()
    [put] = machine.frame_received(frame("SEND", b"a\0b", destination="/queue/q", priority="7", receipt="r", x="1"))
    assert isinstance(put, Put) and (put.kind, put.name, put.txn) == ("queue", "q", None)
    [(fields, body)] = put.messages
    assert body == b"a\0b" and fields["priority"] == 7 and fields["properties"] == {"x": "1"}
    [receipt] = sent(machine.done(put.frame))
    assert (receipt.command, receipt.get("receipt-id")) == ("RECEIPT", "r")


@pytest.mark.parametrize(
    "headers, code",
    [
        ({"destination": "/exchange/x"}, "not_found"),
        ({}, "invalid"),
        ({"destination": "/queue/q", "priority": "11"}, "invalid"),
        ({"destination": "/queue/q", "transaction": "t9"}, "invalid"),
    ],
)
def test_bad_sends_are_refused_before_the_engine_is_asked(headers, code):
    machine = connected()
    actions = machine.frame_received(frame("SEND", **headers))
    assert [type(a) for a in actions] == [Send, Close]
    assert actions[0].frame.get("x-baton-code") == code


def test_sends_in_one_transaction_batch_into_one_put():
    machine = connected()
    [begin] = machine.frame_received(frame("BEGIN", transaction="t"))
    assert isinstance(begin, Begin) and machine.transactions == {"t": begin.txn}
    first = frame("SEND", b"1", destination="/queue/q", transaction="t")
    assert machine.batchable(first)
    batch = [first]
    for following in (frame("SEND", b"2", destination="/queue/q", transaction="t"),):
        assert machine.batch_goes_on(batch, following)
        batch.append(following)
    assert not machine.batch_goes_on(batch, frame("SEND", destination="/queue/other", transaction="t"))
    assert not machine.batchable(frame("SEND", destination="/queue/q"))  # not in a transaction
    [put] = machine.sends_received(batch)
    assert put.txn is begin.txn and [body for _, body in put.messages] == [b"1", b"2"]


@pytest.mark.parametrize(
    "headers, text",
    [
        ({"ack": "sometimes"}, "ack must be auto"),
        ({"prefetch_count": "0"}, "prefetch-count"),
        ({"x_baton_preemptive": "true"}, "pre-emptive subscription needs ack:client"),
    ],
)
def test_bad_subscribes(headers, text):
    machine = connected()
    [error] = sent(machine.frame_received(frame("SUBSCRIBE", id="1", destination="/queue/q", **headers)))
    assert text in error.get("message")


def test_subscribe_checks_then_the_subscription_is_the_connections():
    machine = connected(max_subscriptions=1)
    action = subscribed(machine, ack="client", prefetch_count="5")
    sub = action.sub
    assert (action.kind, action.name, sub.ack, sub.prefetch) == ("queue", "q", "client", 5)
    assert machine.subscriptions == {"1": sub}
    [error] = sent(machine.frame_received(frame("SUBSCRIBE", id="2", destination="/queue/r")))
    assert "BATON_STOMP_MAX_SUBSCRIPTIONS" in error.get("message")


def test_a_durable_topic_subscription_needs_an_id_and_stays_unless_unsubscribed_durably():
    machine = connected("1.0")
    [error] = sent(machine.frame_received(frame("SUBSCRIBE", destination="/topic/a.b", durable="true")))
    assert "needs an id" in error.get("message")
    machine = connected()
    [action] = machine.frame_received(frame("SUBSCRIBE", id="d", destination="/topic/a.b", persistent="true"))
    assert action.sub.durable and action.kind == "topic"
    action.sub.topic_name = "stomp.d.x"
    machine.subscribed(action.sub)
    [plain] = machine.frame_received(frame("UNSUBSCRIBE", id="d"))
    assert isinstance(plain, Unsubscribe) and not plain.remove
    [durably] = machine.frame_received(frame("UNSUBSCRIBE", id="d", durable="true"))
    assert durably.remove


def test_messages_carry_ack_ids_in_1_2_and_client_acks_are_cumulative():
    machine = connected()
    sub = subscribed(machine, ack="client").sub
    frames = [machine.message(sub, Got(msg_id=f"m{i}", lock_token=f"k{i}")) for i in range(3)]
    assert [f.get("ack") for f in frames] == ["1", "2", "3"]
    assert frames[0].as_dict()["destination"] == "/queue/q" and frames[0].body == b"hello"
    [ack] = machine.frame_received(frame("ACK", id="2", receipt="r"))
    assert isinstance(ack, Ack) and [p.token for p in ack.covered] == ["k0", "k1"] and ack.txn is None
    assert machine.forgotten(ack.covered) == {sub}
    assert list(sub.pending) == ["m2"]
    [error] = sent(machine.frame_received(frame("ACK", id="1")))  # already acknowledged
    assert "unknown or already acknowledged" in error.get("message")


def test_client_individual_acks_one_and_nack_says_requeue():
    machine = connected("1.1")
    sub = subscribed(machine, ack="client-individual").sub
    for i in range(2):
        assert machine.message(sub, Got(msg_id=f"m{i}")).get("ack") is None  # 1.1: message-id and subscription
    [nack] = machine.frame_received(frame("NACK", message_id="m1", subscription="1", requeue="false"))
    assert isinstance(nack, Nack) and [p.msg_id for p in nack.covered] == ["m1"] and not nack.requeue
    [error] = sent(machine.frame_received(frame("ACK", message_id="m0")))  # 1.1 needs subscription
    assert "subscription" in error.get("message")


def test_a_redelivered_message_says_so():
    machine = connected()
    sub = subscribed(machine).sub
    assert machine.message(sub, Got(msg_id="m", delivery_count=2)).get("redelivered") == "true"


def test_a_pre_emptive_delivery_is_acknowledged_only_under_its_transaction():
    machine = connected()
    sub = subscribed(machine, ack="client", x_baton_preemptive="true").sub
    [begin] = machine.frame_received(frame("BEGIN", transaction="t"))
    message = machine.message(sub, Got(msg_id="m", lock_token=None), txn=begin.txn)
    assert message.get("transaction") == "t" and list(begin.txn.delivered) == ["m"]
    [error] = sent(machine.frame_received(frame("ACK", id=message.get("ack"))))
    assert "needs transaction:t" in error.get("message")


def test_transactions_begin_once_and_end_by_commit_or_abort():
    machine = connected()
    [begin] = machine.frame_received(frame("BEGIN", transaction="t"))
    [error] = sent(connected().frame_received(frame("COMMIT", transaction="t")))
    assert "No transaction 't'" in error.get("message")
    [commit] = machine.frame_received(frame("COMMIT", transaction="t"))
    assert isinstance(commit, Commit) and commit.txn is begin.txn
    machine.transaction_ended(commit.txn)
    assert machine.transactions == {}
    [error] = sent(machine.frame_received(frame("ABORT", transaction="t")))
    assert "No transaction" in error.get("message")


def test_disconnect_ends_with_the_receipt_then_close_and_nothing_after():
    machine = connected()
    [disconnect] = machine.frame_received(frame("DISCONNECT", receipt="bye"))
    assert isinstance(disconnect, Disconnect)
    actions = machine.done(disconnect.frame)
    assert [type(a) for a in actions] == [Send, Close] and actions[0].frame.get("receipt-id") == "bye"
    assert machine.state is State.DISCONNECTED
    assert machine.frame_received(frame("SEND", destination="/queue/q")) == []


def test_a_server_frame_from_the_client_is_refused():
    machine = connected()
    [error] = sent(machine.frame_received(frame("MESSAGE")))
    assert "server sends" in error.get("message")


def test_an_engine_refusal_is_an_error_once_and_a_connection_error_always():
    machine = connected()
    first = machine.refused(BatonError("The queue was deleted."), frame("SEND", receipt="r"))
    assert sent(first)[0].get("receipt-id") == "r"
    assert machine.refused(BatonError("again"), frame("SEND")) == []  # after an ERROR, frames get none
    assert [type(a) for a in machine.refused(BatonError("timed out"), None)] == [Send, Close]


def test_1_0_frames_that_cannot_carry_a_header_drop_it():
    machine = connected("1.0")
    sub = subscribed(machine).sub
    message = machine.message(sub, Got(msg_id="m", properties={"note": "two\nlines"}))
    assert message.as_dict().keys() == {"destination", "message-id", "subscription"}
    frame_encode(message, version="1.0")  # writable
    [error] = sent(machine.refused(BatonError("refused"), frame("SEND", receipt="r\nx")))
    assert error.headers == [("message", "The frame was refused.")]

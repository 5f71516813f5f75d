"""`Message.from_json`: a message as the server's JSON gave it, field by field, without a
server (the client builds one per message of every put and get reply)."""

from __future__ import annotations

import base64
from dataclasses import asdict
from datetime import datetime, timezone

import pytest

from baton_client import Message

pytestmark = pytest.mark.once  # no database

SERVER_JSON = {
    "msg_id": "18ec67d483487e48ad2a08b97533b3f10000000000000bbd",
    "body": "héllo",
    "priority": 4,
    "persistence": "persistent",
    "put_time": "2026-11-29T03:55:13.847206+00:00",
    "expires_at": None,
    "locked_until": "",
    "properties": {"k": "v"},
    "queue": "Q",
    "broker": "B",
    "a_field_this_client_does_not_know": 1,
}


def test_every_known_field_is_taken_and_the_rest_kept_aside():
    m = Message.from_json(SERVER_JSON, transaction="T1")
    assert (m.msg_id, m.priority, m.persistence, m.properties, m.queue, m.broker) == (
        SERVER_JSON["msg_id"],
        4,
        "persistent",
        {"k": "v"},
        "Q",
        "B",
    )
    assert m.put_time == datetime(2026, 11, 29, 3, 55, 13, 847206, tzinfo=timezone.utc)
    assert (m.expires_at, m.locked_until) == (None, None)
    assert m.body == "héllo".encode() and m.text == "héllo"
    assert m.body_base64 == base64.b64encode("héllo".encode()).decode("ascii")
    assert m.extra == {"a_field_this_client_does_not_know": 1}
    assert m.transaction == "T1"  # the reply's unit of work when the message names none
    # the defaults of the fields the server left out
    assert (m.correl_id, m.backout_count, m.delivery_count, m.report, m.lock_token, m.receipt) == (
        None,
        0,
        0,
        None,
        None,
        None,
    )


def test_a_body_in_base64_and_a_transaction_named_by_the_message():
    data = {"msg_id": "M", "body_base64": base64.b64encode(b"\x00\xff").decode(), "transaction": "T2"}
    m = Message.from_json(data, transaction="T1")
    assert (m.body, m.transaction, m.extra) == (b"\x00\xff", "T2", {})
    assert Message.from_json({"msg_id": "M"}).body == b""


def test_messages_share_no_state_and_compare_as_objects():
    a, b = Message.from_json(SERVER_JSON), Message.from_json(SERVER_JSON)
    a.extra["x"] = 1
    assert b.extra == {"a_field_this_client_does_not_know": 1}
    assert a != b and a == a  # eq=False: identity


def test_json_without_a_message_id_is_refused_as_the_constructor_refuses_it():
    with pytest.raises(TypeError, match="msg_id"):
        Message.from_json({"body": "x"})


def test_body_base64_of_a_text_body_is_made_when_read_and_what_is_set_comes_first():
    m = Message.from_json(SERVER_JSON)
    assert "body_base64" not in vars(m)  # not made with the message
    assert m.body_base64 == base64.b64encode("héllo".encode()).decode("ascii")
    assert vars(m)["body_base64"] == m.body_base64  # made once, then kept
    assert asdict(Message.from_json(SERVER_JSON))["body_base64"] == m.body_base64
    sent = Message.from_json({"msg_id": "M", "body_base64": "AP8="})
    assert (sent.body, sent.body_base64) == (b"\x00\xff", "AP8=")  # the server's own
    assert Message.from_json({"msg_id": "M"}).body_base64 == ""  # no body
    built = Message(msg_id="M", body=b"x")
    assert built.body_base64 == "" and Message.body_base64 == ""  # the constructor's default, as before
    built.body_base64 = "eA=="
    assert built.body_base64 == "eA=="

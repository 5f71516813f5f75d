"""Definitions, put, get and browse through the client against a live server, and the
errors the server reports as exceptions."""

from __future__ import annotations

import threading
from dataclasses import fields

import pytest

from baton_client import (
    AlreadyExists,
    Batch,
    Client,
    GetInhibited,
    InvalidInput,
    Message,
    MessageTooLarge,
    NotAuthenticated,
    NotEmpty,
    NotFound,
    OptionsConflict,
    PutInhibited,
    QueueFull,
)

pytestmark = [pytest.mark.integration, pytest.mark.once]  # once: its servers use SQLite in either pass

#: Every field of a message on output, per docs/api.md (input fields + the output-only ones).
API_OUTPUT_FIELDS = {
    "body",
    "body_base64",
    "correl_id",
    "group_id",
    "msg_type",
    "priority",
    "persistence",
    "expiry_ms",
    "format",
    "reply_to_queue",
    "reply_to_broker",
    "report",
    "properties",
    "refers_to",
    "msg_id",
    "put_time",
    "expires_at",
    "backout_count",
    "delivery_count",
    "queue",
    "broker",
}


def test_brokers_and_queues(client, transport):
    name = f"DEFS.{transport.upper()}"  # one broker per transport on the shared platform
    broker = client.define_broker(name, description="for the client", transaction_timeout_ms=30_000)
    assert broker["name"] == name and broker["dead_letter_queue"] == "SYSTEM.DEAD.LETTER.QUEUE"
    assert name in [b["name"] for b in client.list_brokers()]
    assert client.alter_broker(name, description="changed")["description"] == "changed"
    assert client.display_broker(name)["transaction_timeout_ms"] == 30_000

    queue = client.define_queue(name, "APP/IN.1", max_depth=10, default_priority=4)
    assert (queue["name"], queue["max_depth"], queue["depth"]) == ("APP/IN.1", 10, 0)
    names = [q["name"] for q in client.list_queues(name)]
    assert {"APP/IN.1", "SYSTEM.DEAD.LETTER.QUEUE"} <= set(names)
    assert client.alter_queue(name, "APP/IN.1", max_depth=20)["max_depth"] == 20
    client.put(name, "APP/IN.1", "one")
    shown = client.display_queue(name, "APP/IN.1")
    assert (shown["depth"], shown["uncommitted_puts"], shown["in_flight"], shown["locked"]) == (1, 0, 0, 0)
    with pytest.raises(NotEmpty) as info:
        client.delete_queue(name, "APP/IN.1")
    assert info.value.status == 409
    client.delete_queue(name, "APP/IN.1", purge=True)
    with pytest.raises(NotFound):
        client.display_queue(name, "APP/IN.1")
    with pytest.raises(AlreadyExists) as info:
        client.define_broker(name)
    assert info.value.status == 409 and info.value.code == "already_exists"


def test_put_get_with_descriptor_fields(client, broker):
    correl = "ab" * 24
    put = client.put(
        broker,
        "Q1",
        "hello",
        priority=5,
        correl_id=correl,
        format="text/plain",
        properties={"k": "v"},
        expiry_ms=600_000,
    )
    assert isinstance(put, Message) and len(put.msg_id) == 48 and put.transaction is None
    assert (put.queue, put.broker, put.priority, put.correl_id) == ("Q1", broker, 5, correl)
    assert put.expires_at is not None and put.put_time is not None
    got = client.get(broker, "Q1")
    assert got.msg_id == put.msg_id and got.text == "hello" and got.body == b"hello"
    assert got.properties == {"k": "v"} and got.format == "text/plain" and got.expiry_ms > 0
    assert {f.name for f in fields(Message)} >= API_OUTPUT_FIELDS
    assert client.get(broker, "Q1") is None


def test_binary_bodies_round_trip(client, broker):
    raw = bytes(range(256))
    put = client.put(broker, "Q1", raw)
    assert put.body == raw
    with pytest.raises(UnicodeDecodeError):
        _ = put.text
    text = client.put(broker, "Q1", "h\u00e9llo \u2713")
    batch = client.get(broker, "Q1", batch=5)
    assert isinstance(batch, Batch) and [m.msg_id for m in batch] == [put.msg_id, text.msg_id]
    assert batch[0].body == raw and batch[0].extra.get("body") is None
    assert batch[1].text == "h\u00e9llo \u2713" and batch[1].body == "h\u00e9llo \u2713".encode()


def test_batch_put_match_and_empty_reason(client, broker):
    correl = "cd" * 24
    put = client.put(
        broker, "Q1", messages=["a", b"\x00b", {"body": "c", "correl_id": correl, "priority": 9}], priority=1
    )
    assert [m.body for m in put] == [b"a", b"\x00b", b"c"] and [m.priority for m in put] == [1, 1, 9]
    assert client.get(broker, "Q1", correl_id=correl).msg_id == put[2].msg_id
    assert client.get(broker, "Q1", match={"msg_id": put[1].msg_id}).body == b"\x00b"
    batch = client.get(broker, "Q1", batch=10)
    assert [m.msg_id for m in batch] == [put[0].msg_id] and batch.reason is None
    empty = client.get(broker, "Q1", batch=10)
    assert empty == [] and empty.reason == "empty"


def test_browse_iterates_pages_and_resumes_from_its_cursor(client, broker):
    put = client.put(broker, "Q1", messages=[f"m{i}" for i in range(5)])
    browser = client.browse(broker, "Q1", page_size=2)
    assert [m.msg_id for m in browser] == [m.msg_id for m in put]
    assert client.display_queue(broker, "Q1")["depth"] == 5, "browse must not remove"
    later = client.put(broker, "Q1", messages=["m5", "m6"])
    assert [m.text for m in browser] == ["m5", "m6"]
    assert [m.text for m in client.browse(broker, "Q1", cursor=browser.cursor)] == []
    assert [m.text for m in client.browse(broker, "Q1", ordered=True, page_size=3)] == [f"m{i}" for i in range(7)]
    assert later[0].msg_id != put[-1].msg_id


def test_browse_can_keep_polling_for_new_messages(client, other_client, broker):
    browser = iter(client.browse(broker, "Q1", follow=True, poll_interval=0.05, follow_timeout=20))
    seen: list[Message] = []
    done = threading.Event()

    def reader() -> None:
        seen.append(next(browser))
        done.set()

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    put = other_client.put(broker, "Q1", "arrived later")
    assert done.wait(25), "the following browse did not show a message put after it started"
    assert [m.msg_id for m in seen] == [put.msg_id]
    quiet = client.browse(broker, "Q1", cursor=None, follow=True, poll_interval=0.05, follow_timeout=0.2)
    assert [m.msg_id for m in quiet] == [put.msg_id]


def test_error_mapping(platform, client, broker):
    with pytest.raises(NotFound) as info:
        client.put(broker, "NOPE", "x")
    assert (info.value.status, info.value.code) == (404, "not_found") and info.value.message
    with pytest.raises(NotFound):
        client.display_broker("NO.SUCH.BROKER")

    client.define_queue(broker, "SMALL", max_depth=1, max_message_length=10)
    client.put(broker, "SMALL", "fits")
    with pytest.raises(QueueFull) as info:
        client.put(broker, "SMALL", "no room")
    assert (info.value.status, info.value.code) == (409, "queue_full")
    client.get(broker, "SMALL")
    with pytest.raises(MessageTooLarge) as info:
        client.put(broker, "SMALL", b"x" * 11)
    assert (info.value.status, info.value.code) == (413, "message_too_large")

    with pytest.raises(InvalidInput) as info:
        client.put(broker, "Q1", "x", priority=99)
    assert info.value.status == 400 and "priority" in info.value.errors
    with pytest.raises(OptionsConflict) as info:
        client.get(broker, "Q1", preemptive=True)
    assert info.value.status == 409

    client.alter_queue(broker, "SMALL", put_enabled=False, get_enabled=False)
    with pytest.raises(PutInhibited):
        client.put(broker, "SMALL", "x")
    with pytest.raises(GetInhibited):
        client.get(broker, "SMALL")

    with Client(platform.url, "not-a-valid-token") as stranger, pytest.raises(NotAuthenticated) as info:
        stranger.list_brokers()
    assert info.value.status == 401


def test_queue_names_that_would_make_urls_ambiguous_are_refused(client, broker):
    """Names may hold '/', but not a part the API's paths use after a name ("X/get",
    "X/messages", ...): those would be routed to another endpoint, so they are refused."""
    from baton_client import InvalidInput

    for name in ("IN/get", "IN/messages", "A/queues/B"):
        with pytest.raises(InvalidInput):
            client.define_queue(broker, name)
    assert client.define_queue(broker, "IN/orders")["name"] == "IN/orders"
    client.put(broker, "IN/orders", "x")
    assert client.display_queue(broker, "IN/orders")["depth"] == 1


def test_a_put_answers_with_the_bodies_it_sent(client, broker):
    """The client asks for put replies without bodies and gives each message the body it
    sent, skipping those the server skipped as duplicates; gets ask for each body once."""
    first = client.put(broker, "Q1", "kept", dedup_key="k-1")
    batch = client.put(
        broker,
        "Q1",
        messages=[{"body": "dup", "dedup_key": "k-1"}, b"\x00\xff", {"body": "t\u00e9xt", "dedup_key": "k-2"}],
    )
    assert [m.body for m in batch] == [b"\x00\xff", "t\u00e9xt".encode()]
    assert [m.body_base64 for m in batch] == ["AP8=", "dMOpeHQ="]
    with client.transaction(broker) as txn:
        pending = txn.put("Q1", "under a unit of work")
        assert pending.result().body == b"under a unit of work" and pending.transaction == txn.id
    got = client.get(broker, "Q1", batch=10)
    assert [m.msg_id for m in got] == [first.msg_id, batch[0].msg_id, batch[1].msg_id, pending.msg_id]
    assert [m.body for m in got] == [b"kept", b"\x00\xff", "t\u00e9xt".encode(), b"under a unit of work"]
    assert [m.body_base64 for m in got][:3] == ["a2VwdA==", "AP8=", "dMOpeHQ="]

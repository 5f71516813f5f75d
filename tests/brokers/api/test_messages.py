"""REST contract: put, get and browse (docs/api.md, "Messages" and "Put, get, browse")."""

from __future__ import annotations

import base64
import re
import time

import pytest

from tests.helpers import assert_error

pytestmark = pytest.mark.django_db

Q1 = "/api/brokers/QM1/queues/Q1/"
PUT = Q1 + "messages/"
GET = Q1 + "get/"
HEX48 = re.compile(r"^[0-9a-f]{48}$")

OUTPUT_FIELDS = {
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


def depth(api, queue: str = "Q1", broker: str = "QM1") -> int:
    response = api.get(f"/api/brokers/{broker}/queues/{queue}/")
    assert response.status_code == 200, response.content
    return response.json()["depth"]


def put(api, path: str = PUT, **payload) -> dict:
    response = api.post(path, payload, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def get(api, path: str = GET, **options) -> dict:
    response = api.post(path, options, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


@pytest.fixture
def q2(api, broker):
    def define(name: str, **attributes) -> str:
        response = api.post("/api/brokers/QM1/queues/", {"name": name, **attributes}, format="json")
        assert response.status_code == 201, response.content
        return f"/api/brokers/QM1/queues/{name}/"

    return define


# --- put ----------------------------------------------------------------------------------


def test_put_single_returns_the_stored_message(api, queue):
    stored = put(api, body="hello", format="text/plain", priority=7, properties={"k": "v"})
    assert OUTPUT_FIELDS <= stored.keys(), OUTPUT_FIELDS - stored.keys()
    assert HEX48.match(stored["msg_id"])
    assert stored["body"] == "hello"
    assert stored["body_base64"] == b64(b"hello")
    assert stored["priority"] == 7
    assert stored["format"] == "text/plain"
    assert stored["properties"] == {"k": "v"}
    assert stored["msg_type"] == "datagram"
    assert stored["queue"] == "Q1" and stored["broker"] == "QM1"
    assert stored["backout_count"] == 0 and stored["delivery_count"] == 0
    assert stored["put_time"]
    for absent in (
        "correl_id",
        "group_id",
        "reply_to_queue",
        "reply_to_broker",
        "refers_to",
        "expires_at",
        "expiry_ms",
    ):
        assert stored[absent] is None, absent
    assert depth(api) == 1


def test_put_every_input_field_round_trips_through_get(api, queue, q2):
    q2("REPLIES")
    correl, group = "ab" * 24, "cd" * 24
    stored = put(
        api,
        body="full",
        correl_id=correl,
        group_id=group,
        msg_type="request",
        priority=3,
        persistence="non_persistent",
        format="application/json",
        reply_to_queue="REPLIES",
        reply_to_broker="QM1",
        report=["coa", "exception"],
        properties={"n": 1, "s": "x"},
    )
    got = get(api)["messages"][0]
    for message in (stored, got):
        assert message["correl_id"] == correl and message["group_id"] == group
        assert message["msg_type"] == "request" and message["priority"] == 3
        assert message["persistence"] == "non_persistent"
        assert message["format"] == "application/json"
        assert message["reply_to_queue"] == "REPLIES" and message["reply_to_broker"] == "QM1"
        assert sorted(message["report"]) == ["coa", "exception"]
        assert message["properties"] == {"n": 1, "s": "x"}
    assert got["msg_id"] == stored["msg_id"]
    assert OUTPUT_FIELDS <= got.keys()


def test_put_with_expiry_reports_it(api, queue):
    stored = put(api, body="soon", expiry_ms=60_000)
    assert stored["expires_at"] is not None
    # "On output a message has all of these (absent ones null)": expiry was given, so it is not null.
    assert stored["expiry_ms"] is not None and 0 < stored["expiry_ms"] <= 60_000, stored["expiry_ms"]


def test_put_batch_returns_all_in_order(api, queue):
    response = api.post(PUT, {"messages": [{"body": "a"}, {"body": "b"}, {"body_base64": b64(b"c")}]}, format="json")
    assert response.status_code == 201, response.content
    stored = response.json()["messages"]
    assert [m["body"] for m in stored] == ["a", "b", "c"]
    assert len({m["msg_id"] for m in stored}) == 3 and all(HEX48.match(m["msg_id"]) for m in stored)
    assert depth(api) == 3
    assert [m["body"] for m in get(api, batch=10)["messages"]] == ["a", "b", "c"]


def test_binary_body_round_trips_through_body_base64(api, queue):
    raw = bytes(range(256)) + b"\xff\xfe\x00"
    stored = put(api, body_base64=b64(raw))
    assert stored["body"] is None
    assert base64.b64decode(stored["body_base64"]) == raw
    got = get(api)["messages"][0]
    assert got["body"] is None
    assert base64.b64decode(got["body_base64"]) == raw


def test_utf8_body_base64_is_shown_as_body_too(api, queue):
    text = "h\u00e9llo \u2713 \U0001f600"
    stored = put(api, body_base64=b64(text.encode("utf-8")))
    assert stored["body"] == text
    got = get(api)["messages"][0]
    assert got["body"] == text and base64.b64decode(got["body_base64"]) == text.encode("utf-8")


def test_a_put_may_leave_the_bodies_out_of_its_reply(api, queue):
    """``bodies: none``: the reply has every field but the body; what was stored is whole."""
    raw = bytes(range(256))
    stored = put(api, messages=[{"body": "text"}, {"body_base64": b64(raw)}], bodies="none")
    for m in stored["messages"]:
        assert OUTPUT_FIELDS - {"body", "body_base64"} <= set(m)
        assert "body" not in m and "body_base64" not in m
    one = put(api, body="single", bodies="none")
    assert "body" not in one and "body_base64" not in one and one["transaction"] is None
    got = get(api, batch=3)["messages"]
    assert [m["msg_id"] for m in got] == [m["msg_id"] for m in stored["messages"]] + [one["msg_id"]]
    assert [base64.b64decode(m["body_base64"]) for m in got] == [b"text", raw, b"single"]


def test_a_get_may_ask_for_each_body_once(api, queue):
    """``bodies: one``: ``body`` when the bytes are UTF-8, else ``body_base64``; ``none``:
    neither."""
    raw = bytes(range(256))
    put(api, messages=[{"body": "na\u00efve"}, {"body_base64": b64(raw)}, {"body": "x"}])
    text, binary = get(api, batch=2, bodies="one")["messages"]
    assert text["body"] == "na\u00efve" and "body_base64" not in text
    assert base64.b64decode(binary["body_base64"]) == raw and "body" not in binary
    [last] = get(api, bodies="none")["messages"]
    assert "body" not in last and "body_base64" not in last and last["queue"] == "Q1"


@pytest.mark.parametrize("bodies", ["all", "", None, 1, ["one"]])
def test_bodies_must_be_both_one_or_none(api, queue, bodies):
    for path, payload in ((PUT, {"body": "a"}), (GET, {})):
        body = assert_error(api.post(path, {**payload, "bodies": bodies}, format="json"), 400, "invalid")
        assert "bodies" in body["errors"]
    assert depth(api) == 0


def test_text_body_is_stored_as_utf8(api, queue):
    text = "na\u00efve \u20ac"
    put(api, body=text)
    got = get(api)["messages"][0]
    assert got["body"] == text
    assert base64.b64decode(got["body_base64"]) == text.encode("utf-8")


def test_empty_body_is_allowed(api, queue):
    stored = put(api, body="")
    assert stored["body"] == "" and stored["body_base64"] == ""


def test_body_and_body_base64_together_is_400(api, queue):
    body = assert_error(api.post(PUT, {"body": "a", "body_base64": b64(b"a")}, format="json"), 400, "invalid")
    assert body["errors"]
    assert depth(api) == 0


@pytest.mark.parametrize(
    "fields,field",
    [
        ({"body_base64": "not base64!!"}, "body_base64"),
        ({"body_base64": 12}, "body_base64"),
        ({"body": 12}, "body"),
        ({"body": {"nested": True}}, "body"),
        ({"priority": 10}, "priority"),
        ({"priority": -1}, "priority"),
        ({"priority": "high"}, "priority"),
        ({"priority": True}, "priority"),
        ({"msg_type": "letter"}, "msg_type"),
        ({"persistence": "forever"}, "persistence"),
        ({"expiry_ms": 0}, "expiry_ms"),
        ({"expiry_ms": "1s"}, "expiry_ms"),
        ({"correl_id": "abc"}, "correl_id"),
        ({"correl_id": "zz" * 24}, "correl_id"),
        ({"group_id": 5}, "group_id"),
        ({"reply_to_queue": "bad name"}, "reply_to_queue"),
        ({"report": ["coa"]}, "reply_to_queue"),
        ({"report": ["sometimes"], "reply_to_queue": "R"}, "report"),
        ({"properties": ["a"]}, "properties"),
        ({"format": "x" * 101}, "format"),
        ({"refers_to": {"msg_id": "ab", "action": "cancel"}}, "refers_to"),
        ({"colour": "blue"}, "colour"),
    ],
)
def test_bad_message_field_is_400_naming_the_field(api, queue, fields, field):
    payload = fields if {"body", "body_base64"} & fields.keys() else {"body": "x", **fields}
    body = assert_error(api.post(PUT, payload, format="json"), 400, "invalid")
    assert field in body["errors"], body
    assert depth(api) == 0


def test_every_bad_field_is_named_at_once(api, queue):
    body = assert_error(
        api.post(PUT, {"body": "x", "priority": 11, "msg_type": "?", "colour": 1}, format="json"), 400, "invalid"
    )
    assert {"priority", "msg_type", "colour"} <= body["errors"].keys()


def test_batch_with_one_bad_message_stores_nothing(api, queue):
    payload = {"messages": [{"body": "ok"}, {"body": "bad", "priority": 99}, {"body": "ok too"}]}
    body = assert_error(api.post(PUT, payload, format="json"), 400, "invalid")
    assert any("1" in key and "priority" in key for key in body["errors"]), body
    assert depth(api) == 0
    assert get(api)["messages"] == []


@pytest.mark.parametrize("messages", ["a", {"body": "a"}, [], ["a"]])
def test_batch_that_is_not_a_list_of_objects_is_400(api, queue, messages):
    assert_error(api.post(PUT, {"messages": messages}, format="json"), 400, "invalid")
    assert depth(api) == 0


def test_too_many_messages_in_one_put_is_400(api, queue, settings):
    settings.BATON_MAX_BATCH = 3
    assert_error(api.post(PUT, {"messages": [{"body": str(i)} for i in range(4)]}, format="json"), 400, "invalid")
    assert depth(api) == 0


def test_message_too_large_is_413(api, q2):
    path = q2("SMALL", max_message_length=10)
    assert put(api, path + "messages/", body="x" * 10)["body"] == "x" * 10
    body = assert_error(api.post(path + "messages/", {"body": "x" * 11}, format="json"), 413, "message_too_large")
    assert body["message"]
    assert depth(api, "SMALL") == 1


def test_batch_with_one_message_too_large_stores_nothing(api, q2):
    path = q2("SMALL", max_message_length=10)
    payload = {"messages": [{"body": "fine"}, {"body_base64": b64(b"\x00" * 11)}]}
    assert_error(api.post(path + "messages/", payload, format="json"), 413, "message_too_large")
    assert depth(api, "SMALL") == 0


def test_put_inhibited_is_409(api, q2):
    path = q2("CLOSED", put_enabled=False)
    assert_error(api.post(path + "messages/", {"body": "x"}, format="json"), 409, "put_inhibited")
    assert depth(api, "CLOSED") == 0


def test_get_inhibited_is_409_and_message_stays(api, q2):
    path = q2("NOGET", get_enabled=False)
    put(api, path + "messages/", body="x")
    assert_error(api.post(path + "get/", {}, format="json"), 409, "get_inhibited")
    assert depth(api, "NOGET") == 1


def test_queue_full_is_409_and_batch_stores_nothing(api, q2):
    path = q2("TWO", max_depth=2)
    assert_error(
        api.post(path + "messages/", {"messages": [{"body": "a"}, {"body": "b"}, {"body": "c"}]}, format="json"),
        409,
        "queue_full",
    )
    assert depth(api, "TWO") == 0
    put(api, path + "messages/", messages=[{"body": "a"}, {"body": "b"}])
    assert_error(api.post(path + "messages/", {"body": "c"}, format="json"), 409, "queue_full")
    assert depth(api, "TWO") == 2


def test_put_bad_syncpoint_is_400(api, queue):
    body = assert_error(api.post(PUT, {"body": "x", "syncpoint": "sometimes"}, format="json"), 400, "invalid")
    assert "syncpoint" in body["errors"]
    assert depth(api) == 0


def test_put_under_transaction_with_syncpoint_no_is_options_conflict(api, queue):
    txn = api.post("/api/brokers/QM1/transactions/", {}, format="json").json()["id"]
    assert_error(
        api.post(PUT, {"body": "x", "transaction": txn, "syncpoint": "no"}, format="json"), 409, "options_conflict"
    )
    assert api.get(Q1).json()["uncommitted_puts"] == 0


def test_put_syncpoint_yes_without_transaction_begins_one(api, queue):
    stored = put(api, body="x", syncpoint="yes")
    txn = stored["transaction"]
    assert txn
    assert get(api)["messages"] == []
    assert api.post(f"/api/transactions/{txn}/commit/", {}, format="json").status_code == 200
    assert [m["body"] for m in get(api)["messages"]] == ["x"]


# --- get ----------------------------------------------------------------------------------


def test_get_from_empty_queue_says_empty(api, queue):
    body = get(api)
    assert body["messages"] == []
    assert body["reason"] == "empty"


def test_get_removes_the_message(api, queue):
    stored = put(api, body="once")
    got = get(api)
    assert [m["msg_id"] for m in got["messages"]] == [stored["msg_id"]]
    assert got["messages"][0]["body"] == "once"
    assert depth(api) == 0
    assert get(api)["reason"] == "empty"


def test_get_with_wait_on_empty_queue_waits_then_says_empty(api, queue):
    started = time.monotonic()
    body = get(api, wait=0.3)
    assert time.monotonic() - started >= 0.3
    assert body["messages"] == [] and body["reason"] == "empty"


def test_get_with_wait_returns_available_message_at_once(api, queue):
    put(api, body="ready")
    assert [m["body"] for m in get(api, wait=30)["messages"]] == ["ready"]


def test_get_batch(api, queue):
    put(api, messages=[{"body": str(i)} for i in range(5)])
    assert [m["body"] for m in get(api, batch=3)["messages"]] == ["0", "1", "2"]
    assert [m["body"] for m in get(api, batch=10)["messages"]] == ["3", "4"]
    assert get(api, batch=10)["reason"] == "empty"


def test_get_in_priority_order_then_put_order(api, queue):
    put(
        api,
        messages=[{"body": "low1", "priority": 1}, {"body": "high", "priority": 9}, {"body": "low2", "priority": 1}],
    )
    assert [m["body"] for m in get(api, batch=3)["messages"]] == ["high", "low1", "low2"]


def test_get_fifo_queue_ignores_priority(api, q2):
    path = q2("FIFO", delivery_sequence="fifo")
    put(api, path + "messages/", messages=[{"body": "a", "priority": 1}, {"body": "b", "priority": 9}])
    assert [m["body"] for m in get(api, path + "get/", batch=2)["messages"]] == ["a", "b"]


def test_get_by_msg_id(api, queue):
    stored = put(api, messages=[{"body": "a"}, {"body": "b"}, {"body": "c"}])["messages"]
    got = get(api, msg_id=stored[1]["msg_id"])
    assert [m["body"] for m in got["messages"]] == ["b"]
    assert depth(api) == 2
    again = get(api, msg_id=stored[1]["msg_id"])
    assert again["messages"] == [] and again["reason"]


def test_get_by_correl_id(api, queue):
    correl = "0f" * 24
    put(api, messages=[{"body": "a"}, {"body": "b", "correl_id": correl}, {"body": "c", "correl_id": correl}])
    got = get(api, correl_id=correl, batch=10)
    assert [m["body"] for m in got["messages"]] == ["b", "c"]
    assert all(m["correl_id"] == correl for m in got["messages"])
    assert [m["body"] for m in get(api, batch=10)["messages"]] == ["a"]


def test_get_by_correl_id_upper_case_matches(api, queue):
    correl = "ab" * 24
    put(api, body="x", correl_id=correl)
    assert [m["body"] for m in get(api, correl_id=correl.upper())["messages"]] == ["x"]


def test_get_by_unmatched_id_returns_nothing_with_reason(api, queue):
    put(api, body="a")
    body = get(api, correl_id="11" * 24)
    assert body["messages"] == [] and isinstance(body["reason"], str) and body["reason"]
    assert depth(api) == 1


def test_expired_message_is_never_returned(api, queue):
    stored = put(api, body="old", expiry_ms=1)
    put(api, body="new")
    from brokers.models import Message
    from django.utils import timezone

    Message.objects.filter(msg_id=stored["msg_id"]).update(expires_at=timezone.now())
    assert [m["body"] for m in get(api, batch=10)["messages"]] == ["new"]


@pytest.mark.parametrize(
    "options,field",
    [
        ({"wait": -1}, "wait"),
        ({"wait": 10_000}, "wait"),
        ({"wait": "long"}, "wait"),
        ({"batch": 0}, "batch"),
        ({"batch": 1.5}, "batch"),
        ({"batch": 100_000}, "batch"),
        ({"msg_id": 5}, "msg_id"),
        ({"mode": "sideways"}, "mode"),
        ({"colour": "blue"}, "colour"),
        ({"syncpoint": "sometimes"}, "syncpoint"),
    ],
)
def test_get_bad_option_is_400_naming_it(api, queue, options, field):
    put(api, body="stay")
    body = assert_error(api.post(GET, options, format="json"), 400, "invalid")
    assert field in body["errors"], body
    assert depth(api) == 1


def test_get_under_transaction_keeps_message_in_flight_until_commit(api, queue):
    put(api, body="m")
    txn = api.post("/api/brokers/QM1/transactions/", {}, format="json").json()["id"]
    got = get(api, transaction=txn)
    assert [m["body"] for m in got["messages"]] == ["m"]
    assert got["transaction"] == txn
    detail = api.get(Q1).json()
    assert detail["depth"] == 1 and detail["in_flight"] == 1
    assert get(api)["reason"] == "empty"
    assert api.post(f"/api/transactions/{txn}/commit/", {}, format="json").status_code == 200
    assert depth(api) == 0


def test_get_under_transaction_rolled_back_returns_message(api, queue):
    put(api, body="m")
    txn = api.post("/api/brokers/QM1/transactions/", {}, format="json").json()["id"]
    get(api, transaction=txn)
    assert api.post(f"/api/transactions/{txn}/rollback/", {}, format="json").status_code == 200
    again = get(api)["messages"]
    assert [m["body"] for m in again] == ["m"] and again[0]["backout_count"] == 1


# --- browse -------------------------------------------------------------------------------


def browse_all(api, path: str = PUT, limit: int = 3) -> tuple[list[dict], int]:
    seen: list[dict] = []
    cursor = ""
    for pages in range(1, 100):
        response = api.get(path, {"limit": limit, "cursor": cursor})
        assert response.status_code == 200, response.content
        body = response.json()
        assert len(body["messages"]) <= limit
        assert isinstance(body["cursor"], str)
        seen.extend(body["messages"])
        cursor = body["cursor"]
        if not body["messages"]:
            return seen, pages
    raise AssertionError("browse never reached the end of the queue")


def test_browse_pages_through_every_message_once_without_removing(api, queue):
    stored = put(api, messages=[{"body": f"m{i}"} for i in range(8)])["messages"]
    seen, pages = browse_all(api, limit=3)
    assert [m["msg_id"] for m in seen] == [m["msg_id"] for m in stored]
    assert [m["body"] for m in seen] == [f"m{i}" for i in range(8)]
    assert pages >= 3
    assert OUTPUT_FIELDS <= seen[0].keys()
    assert depth(api) == 8
    assert [m["body"] for m in get(api, batch=8)["messages"]] == [f"m{i}" for i in range(8)]


def test_browse_cursor_shows_what_came_since(api, queue):
    put(api, messages=[{"body": "a"}, {"body": "b"}])
    first = api.get(PUT, {"limit": 10}).json()
    assert [m["body"] for m in first["messages"]] == ["a", "b"]
    put(api, body="c")
    later = api.get(PUT, {"limit": 10, "cursor": first["cursor"]}).json()
    assert [m["body"] for m in later["messages"]] == ["c"]


def test_browse_does_not_show_uncommitted_or_gotten_messages(api, queue):
    put(api, messages=[{"body": "a"}, {"body": "b"}])
    txn = api.post("/api/brokers/QM1/transactions/", {}, format="json").json()["id"]
    put(api, body="uncommitted", transaction=txn)
    get(api)  # removes "a"
    seen, _ = browse_all(api)
    assert [m["body"] for m in seen] == ["b"]


def test_browse_filters_by_body_and_property_in_pages_both_orders(api, queue):
    put(
        api,
        messages=[{"body": f"order {i}", "properties": {"kind": "order" if i % 2 else "note"}} for i in range(10)]
        + [{"body_base64": b64(b"\xff order \x00")}],
    )
    odd = [f"order {i}" for i in range(1, 10, 2)]
    for ordered in (False, True):
        seen, cursor = [], ""
        for _ in range(10):
            page = api.get(PUT, {"limit": 2, "cursor": cursor, "property": "kind=order", "ordered": ordered}).json()
            if not page["messages"]:
                break
            seen += [m["body"] for m in page["messages"]]
            cursor = page["cursor"]
        assert seen == odd, ordered
    found = api.get(PUT, {"body_contains": "order \u0000"}).json()["messages"]
    assert [base64.b64decode(m["body_base64"]) for m in found] == [b"\xff order \x00"]
    assert api.get(PUT, {"property": "kind", "body_contains": "9"}).json()["messages"][0]["body"] == "order 9"
    assert depth(api) == 11


def test_browse_binary_body(api, queue):
    put(api, body_base64=b64(b"\xff\x00"))
    message = api.get(PUT).json()["messages"][0]
    assert message["body"] is None and base64.b64decode(message["body_base64"]) == b"\xff\x00"


@pytest.mark.parametrize(
    "params,field",
    [
        ({"cursor": "garbage!!"}, "cursor"),
        ({"cursor": "e30"}, "cursor"),
        ({"limit": 0}, "limit"),
        ({"limit": "many"}, "limit"),
        ({"body_contains": "x" * 201}, "body_contains"),
        ({"property": "no such=thing"}, "property"),
        ({"property": "=1"}, "property"),
        ({"property": "k=a\u0000b"}, "property"),
    ],
)
def test_browse_bad_parameters_are_400(api, queue, params, field):
    body = assert_error(api.get(PUT, params), 400, "invalid")
    assert field in body["errors"], body


def test_browse_a_bad_filter_is_told_as_the_filter(api, queue):
    body = assert_error(api.get(PUT, {"property": "=1", "body_contains": "x" * 201}), 400, "invalid")
    assert body["message"].startswith("The message filter is not valid: A body filter is 1 to 200 characters.")
    assert set(body["errors"]) == {"body_contains", "property"}

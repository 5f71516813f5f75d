"""The session (/api/session/) on the live platform: the same answers as REST, pipelining
with replies in any order, waits that hold up nothing, bad frames answered and survived."""

from __future__ import annotations

import itertools
import json

import httpx
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from websockets.sync.client import connect

pytestmark = [pytest.mark.integration, pytest.mark.once]  # once: its servers use SQLite in either pass

_ids = itertools.count(1)


class Session:
    def __init__(self, platform, *, token: str | None = None, auth_header: bool = True, subprotocols=None) -> None:
        headers = {"Authorization": f"Token {token or platform.token}"} if auth_header else {}
        self._connection = connect(
            f"{platform.ws_url}/api/session/",
            additional_headers=headers,
            max_size=None,
            open_timeout=30,
            subprotocols=subprotocols,
        )
        self.ws = self._connection.__enter__()

    def send(self, **request) -> int | str:
        request.setdefault("id", next(_ids))
        self.ws.send(json.dumps(request))
        self.last = request["id"]
        return request["id"]

    def recv(self, timeout: float = 30) -> dict:
        return json.loads(self.ws.recv(timeout=timeout))

    def call(self, **request) -> dict:
        sent = self.send(**request)
        reply = self.recv()
        assert reply["re"] == sent, reply
        return reply

    def close(self) -> None:
        self._connection.__exit__(None, None, None)


@pytest.fixture
def session(platform):
    s = Session(platform)
    yield s
    s.close()


def rest(http: httpx.Client, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
    response = http.request(method, path, json=body)
    return response.status_code, (response.json() if response.content else {})


def without_volatile(body: dict) -> dict:
    return {
        k: v
        for k, v in body.items()
        if k not in {"re", "status", "msg_id", "put_time", "id", "created_at", "deadline_at", "transaction"}
    }


def test_put_get_commit_through_a_session(session, live_broker):
    put = session.call(op="put", broker=live_broker, queue="Q1", body="hello", priority=4)
    assert put["status"] == 201 and put["body"] == "hello" and put["priority"] == 4
    txn = session.call(op="begin", broker=live_broker)
    assert txn["status"] == 201 and txn["state"] == "active"
    got = session.call(op="get", broker=live_broker, queue="Q1", transaction=txn["id"])
    assert got["status"] == 200 and [m["body"] for m in got["messages"]] == ["hello"]
    committed = session.call(op="commit", transaction=txn["id"])
    assert committed == {"re": session.last, "status": 200, "id": txn["id"], "state": "committed"}
    empty = session.call(op="get", broker=live_broker, queue="Q1")
    assert empty["status"] == 200 and empty["messages"] == [] and empty["reason"] == "empty"


@pytest.mark.parametrize(
    "op,fields,path,method,body",
    [
        (
            "put",
            {"queue": "Q1", "body": "x", "transacton": "t"},
            "queues/Q1/messages/",
            "POST",
            {"body": "x", "transacton": "t"},
        ),
        (
            "put",
            {"queue": "Q1", "body": "x", "priority": 12},
            "queues/Q1/messages/",
            "POST",
            {"body": "x", "priority": 12},
        ),
        ("put", {"queue": "NOPE", "body": "x"}, "queues/NOPE/messages/", "POST", {"body": "x"}),
        ("browse", {"queue": "Q1", "property": "=1"}, "queues/Q1/messages/?property=%3D1", "GET", None),
        ("get", {"queue": "Q1", "wait": -1}, "queues/Q1/get/", "POST", {"wait": -1}),
        ("get", {"queue": "Q1", "preemptive": True}, "queues/Q1/get/", "POST", {"preemptive": True}),
        (
            "put",
            {"queue": "Q1", "messages": [{"body": "a"}], "body": "b"},
            "queues/Q1/messages/",
            "POST",
            {"messages": [{"body": "a"}], "body": "b"},
        ),
        (
            "put",
            {"queue": "Q1", "body": "x", "transaction": "0" * 32},
            "queues/Q1/messages/",
            "POST",
            {"body": "x", "transaction": "0" * 32},
        ),
    ],
)
def test_the_session_answers_as_rest_does(session, http, live_broker, op, fields, path, method, body):
    reply = session.call(op=op, broker=live_broker, **fields)
    status, answer = rest(http, method, f"/api/brokers/{live_broker}/{path}", body)
    assert reply["status"] == status, (reply, answer)
    assert without_volatile(reply) == without_volatile(answer)


def test_transaction_operations_answer_as_rest_does(session, http, live_broker):
    txn = session.call(op="begin", broker=live_broker)["id"]
    for op, path in (("check", "check"), ("rollback", "rollback"), ("commit", "commit")):
        reply = session.call(op=op, transaction=txn)
        status, answer = rest(http, "POST", f"/api/transactions/{txn}/{path}/", {})
        assert reply["status"] == status and without_volatile(reply) == without_volatile(answer), (op, reply, answer)
    reply = session.call(op="transaction", transaction=txn)
    status, answer = rest(http, "GET", f"/api/transactions/{txn}/")
    assert reply["status"] == status == 200 and reply["state"] == answer["state"] == "rolled_back"


def test_a_waiting_get_holds_up_neither_later_requests_nor_other_sessions(platform, session, live_broker):
    waiting = session.send(op="get", broker=live_broker, queue="Q1", wait=20)
    later = session.send(op="put", broker=live_broker, queue="Q2-none", body="x")  # answered first: 404
    first = session.recv()
    assert first["re"] == later and first["status"] == 404
    other = Session(platform)
    try:
        assert other.call(op="put", broker=live_broker, queue="Q1", body="wake")["status"] == 201
    finally:
        other.close()
    woken = session.recv()
    assert woken["re"] == waiting and [m["body"] for m in woken["messages"]] == ["wake"]


def test_pipelined_puts_in_a_unit_of_work_apply_in_order(session, live_broker):
    txn = session.call(op="begin", broker=live_broker)["id"]
    sent = [session.send(op="put", broker=live_broker, queue="Q1", body=str(i), transaction=txn) for i in range(50)]
    replies = [session.recv() for _ in sent]
    assert [r["re"] for r in replies] == sent and all(r["status"] == 201 for r in replies)
    assert session.call(op="commit", transaction=txn)["state"] == "committed"
    got = session.call(op="get", broker=live_broker, queue="Q1", batch=100)
    assert [m["body"] for m in got["messages"]] == [str(i) for i in range(50)]


def test_a_client_that_takes_replies_batched_gets_every_reply_once_in_order(platform, live_broker):
    """The ``baton.batch`` subprotocol: a frame is one reply or an array of them; pipelined
    puts are answered, each once, in the order sent; a session that did not ask it gets one
    reply a frame (the other tests)."""
    batched = Session(platform, subprotocols=["baton.batch"])
    try:
        assert batched.ws.subprotocol == "baton.batch"
        txn = batched.call(op="begin", broker=live_broker)["id"]
        sent = [
            batched.send(op="put", broker=live_broker, queue="Q1", body=str(i), transaction=txn) for i in range(200)
        ]
        replies: list[dict] = []
        while len(replies) < len(sent):
            frame = json.loads(batched.ws.recv(timeout=30))
            assert isinstance(frame, dict) or (isinstance(frame, list) and len(frame) > 1), frame
            replies.extend(frame if isinstance(frame, list) else [frame])
        assert [r["re"] for r in replies] == sent and all(r["status"] == 201 for r in replies)
        assert batched.call(op="commit", transaction=txn)["state"] == "committed"
    finally:
        batched.close()


def test_a_client_of_baton_batch_may_send_requests_in_an_array_frame(platform, live_broker):
    """Under ``baton.batch.v2`` a frame may hold an array of requests: the same as sending
    them one after the other, each answered on its own; under ``baton.batch`` (a client of
    before) or none, an array is one bad frame, answered 400 and not applied."""
    older = Session(platform, subprotocols=["baton.batch"])
    try:
        assert older.ws.subprotocol == "baton.batch"
        older.ws.send(json.dumps([{"id": 1, "op": "begin", "broker": live_broker}]))
        assert older.recv()["errors"] == {"body": ["Must be an object."]}
    finally:
        older.close()
    batched = Session(platform, subprotocols=["baton.batch.v2", "baton.batch"])
    try:
        assert batched.ws.subprotocol == "baton.batch.v2"
        txn = batched.call(op="begin", broker=live_broker)["id"]
        puts = [
            {"id": f"p{i}", "op": "put", "broker": live_broker, "queue": "Q1", "body": f"a{i}", "transaction": txn}
            for i in range(3)
        ]
        batched.ws.send(json.dumps([*puts, {"id": "c", "op": "commit", "transaction": txn}, {"id": "bad"}]))
        replies: list[dict] = []
        while len(replies) < 5:
            frame = json.loads(batched.ws.recv(timeout=30))
            replies.extend(frame if isinstance(frame, list) else [frame])
        assert [(r["re"], r["status"]) for r in replies] == [
            ("p0", 201),
            ("p1", 201),
            ("p2", 201),
            ("c", 200),
            ("bad", 400),
        ]
        assert replies[3]["state"] == "committed"
        got = batched.call(op="get", broker=live_broker, queue="Q1", batch=10)
        assert [m["body"] for m in got["messages"]] == ["a0", "a1", "a2"]
    finally:
        batched.close()


def test_a_held_commit_waits_without_blocking_the_session(session, live_broker):
    producer = session.call(op="begin", broker=live_broker)["id"]
    session.call(op="put", broker=live_broker, queue="Q1", body="p", transaction=producer)
    consumer = session.call(op="begin", broker=live_broker)["id"]
    got = session.call(op="get", broker=live_broker, queue="Q1", transaction=consumer, preemptive=True)
    assert [m["body"] for m in got["messages"]] == ["p"]
    held = session.send(op="commit", transaction=consumer, wait=20)
    commit_producer = session.send(op="commit", transaction=producer)
    replies = {r["re"]: r for r in (session.recv(), session.recv())}
    assert replies[commit_producer]["state"] == "committed"
    assert replies[held]["status"] == 200 and replies[held]["state"] == "committed"


def test_peek_lock_and_connection_operations(session, live_broker):
    session.call(op="put", broker=live_broker, queue="Q1", body="locked")
    got = session.call(op="get", broker=live_broker, queue="Q1", mode="peek_lock")
    token = got["messages"][0]["lock_token"]
    assert session.call(op="renew", lock_token=token)["status"] == 200
    assert session.call(op="complete", lock_token=token)["outcome"] == "completed"
    assert session.call(op="abandon", lock_token=token)["status"] == 404
    conn = session.call(op="connect", broker=live_broker, client_name="app-1")
    assert conn["status"] == 201 and len(conn["conn_id"]) == 48
    page = session.call(op="browse", broker=live_broker, queue="Q1")
    assert page["status"] == 200 and page["messages"] == []


def test_bad_frames_are_answered_and_the_session_stays_open(session, live_broker):
    session.ws.send("not json")
    assert session.recv()["status"] == 400
    session.ws.send("[1, 2]")
    assert session.recv() == {
        "re": None,
        "status": 400,
        "code": "invalid",
        "message": 'A request is one JSON object: {"id", "op", ...fields}.',
        "errors": {"body": ["Must be an object."]},
    }
    session.ws.send(json.dumps({"op": "put"}))
    assert session.recv()["errors"] == {"id": ["Required: a number or a string."]}
    unknown = session.call(op="publish-now")
    assert unknown["status"] == 400 and unknown["errors"] == {"op": ["Unknown operation."]}
    session.ws.send(b"\x00binary")
    assert session.recv()["status"] == 400
    session.ws.send("[" * 100_000)  # deeper than the JSON decoder goes
    assert session.recv()["status"] == 400
    nested: dict = {}
    for _ in range(60):
        nested = {"k": nested}
    deep = session.call(op="put", broker=live_broker, queue="Q1", body="x", properties=nested)
    assert deep["status"] == 400 and deep["code"] == "invalid"
    assert session.call(op="put", broker=live_broker, queue="Q1", body="still open")["status"] == 201


def test_without_a_token_every_operation_is_401_until_auth(platform, live_broker):
    anonymous = Session(platform, auth_header=False)
    try:
        refused = anonymous.call(op="begin", broker=live_broker)
        assert refused["status"] == 401 and refused["code"] == "not_authenticated"
        assert anonymous.call(op="auth", token="wrong")["status"] == 401
        assert anonymous.call(op="auth", token=platform.token)["status"] == 200
        assert anonymous.call(op="begin", broker=live_broker)["status"] == 201
    finally:
        anonymous.close()


def test_a_message_over_the_limit_is_413_as_in_rest(platform, session, live_broker):
    limits = httpx.get(f"{platform.url}/api/session/").status_code
    assert limits == 426  # a plain GET is told to upgrade
    too_long = session.call(op="put", broker=live_broker, queue="Q1", body="x" * (5 * 1024 * 1024))
    assert too_long["status"] == 413 and too_long["code"] == "message_too_large"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)
ops = st.sampled_from(
    [
        "put",
        "get",
        "browse",
        "begin",
        "commit",
        "rollback",
        "check",
        "complete",
        "abandon",
        "renew",
        "dead_letter",
        "connect",
        "transaction",
        "auth",
        "nope",
        None,
    ]
)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(
    frames=st.lists(
        st.fixed_dictionaries(
            {"op": ops},
            optional={
                "id": st.integers(0, 10**6) | st.text(max_size=8),
                "broker": st.text(max_size=8) | st.just("FUZZ"),
                "queue": st.just("Q1") | st.text(max_size=5),
                "transaction": st.text(max_size=40),
                "body": st.text(max_size=30),
                "wait": st.floats(0, 0.05) | json_values,
                "batch": json_values,
                "messages": st.lists(
                    st.dictionaries(st.sampled_from(["body", "priority", "bdy"]), json_values, max_size=3), max_size=3
                ),
                "lock_token": st.text(max_size=40),
                "extra": json_values,
            },
        ),
        min_size=1,
        max_size=6,
    )
)
def test_fuzzed_frames_get_4xx_or_success_never_a_server_error(fuzz_session, frames):
    for frame in frames:
        fuzz_session.ws.send(json.dumps(frame))
        reply = fuzz_session.recv()
        assert reply["status"] < 500, (frame, reply)
        assert "re" in reply and isinstance(reply["status"], int)
        if reply["status"] >= 400:
            assert reply["code"] and reply["message"], reply


@pytest.fixture(scope="module")
def fuzz_session(platform):
    with platform.client() as http:
        http.post("/api/brokers/", json={"name": "FUZZ"})
        http.post("/api/brokers/FUZZ/queues/", json={"name": "Q1"})
    s = Session(platform)
    yield s
    s.close()


def test_a_flood_is_answered_whole_and_the_session_survives(session, live_broker):
    """More requests than a session holds unapplied (BATON_SESSION_MAX_PENDING, 1000): each
    gets exactly one reply, either its answer or 429 throttled; none is lost, and the
    session goes on working."""
    sent = [session.send(op="browse", broker=live_broker, queue="Q1", limit=1) for _ in range(1500)]
    replies = [session.recv() for _ in sent]
    assert sorted(r["re"] for r in replies) == sorted(sent)
    assert {r["status"] for r in replies} <= {200, 429}
    assert all(r["code"] == "throttled" for r in replies if r["status"] == 429)
    assert session.call(op="put", broker=live_broker, queue="Q1", body="after")["status"] == 201


def test_publish_through_a_session_reaches_the_subscription(session, http, live_broker):
    made = http.post(
        f"/api/brokers/{live_broker}/subscriptions/", json={"name": "S1", "topic_filter": "prices/+", "queue": "Q1"}
    )
    assert made.status_code == 201, made.text
    published = session.call(op="publish", broker=live_broker, topic="prices/tea", body="3.10", retain=True)
    assert published["status"] == 201 and published["matched"] == 1 and published["retained"] is True
    bad = session.call(op="publish", broker=live_broker, topic="prices/#", body="x")
    status, answer = rest(http, "POST", f"/api/brokers/{live_broker}/publish/", {"topic": "prices/#", "body": "x"})
    assert bad["status"] == status == 400 and without_volatile(bad) == without_volatile(answer)
    got = session.call(op="get", broker=live_broker, queue="Q1")
    assert [m["body"] for m in got["messages"]] == ["3.10"]

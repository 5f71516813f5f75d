"""The REST API served by a real Uvicorn: put and get, waiting gets woken by another
client's put, other requests answered while a get waits, the OpenAPI schema."""

from __future__ import annotations

import base64
import itertools
import threading

import httpx
import pytest

from .servers import poll_until

pytestmark = [pytest.mark.integration, pytest.mark.once]  # once: its servers use SQLite in either pass

_clients = itertools.count(1)


def test_put_then_get_over_http(http, live_broker):
    queue = f"/api/brokers/{live_broker}/queues/Q1/"
    put = http.post(queue + "messages/", json={"body": "hello over http", "priority": 5})
    assert put.status_code == 201, put.text
    stored = put.json()
    raw = b"\x00\xffbinary"
    put_binary = http.post(queue + "messages/", json={"body_base64": base64.b64encode(raw).decode()})
    assert put_binary.status_code == 201, put_binary.text
    assert http.get(queue).json()["depth"] == 2

    got = http.post(queue + "get/", json={"batch": 10})
    assert got.status_code == 200, got.text
    messages = got.json()["messages"]
    assert [m["msg_id"] for m in messages] == [stored["msg_id"], put_binary.json()["msg_id"]]
    assert messages[0]["body"] == "hello over http" and messages[0]["priority"] == 5
    assert messages[1]["body"] is None and base64.b64decode(messages[1]["body_base64"]) == raw
    empty = http.post(queue + "get/", json={})
    assert empty.json() == {**empty.json(), "messages": [], "reason": "empty"}
    assert http.get(queue).json()["depth"] == 0


def test_errors_from_the_live_server_are_json(platform, http, live_broker):
    anonymous = httpx.get(f"{platform.url}/api/brokers/", timeout=30)
    assert anonymous.status_code == 401 and anonymous.json()["code"] == "not_authenticated"
    missing = http.get(f"/api/brokers/{live_broker}/queues/NOPE/")
    assert missing.status_code == 404 and missing.json()["code"] == "not_found" and missing.json()["message"]
    bad = http.post(f"/api/brokers/{live_broker}/queues/Q1/messages/", json={"body": "x", "priority": 99})
    assert bad.status_code == 400 and "priority" in bad.json()["errors"]


class PendingGet(threading.Thread):
    """A get that waits, run by its own client in its own thread."""

    def __init__(self, platform, path: str, options: dict, wait: float) -> None:
        super().__init__(daemon=True)
        self.platform, self.path, self.options, self.wait_s = platform, path, options, wait
        self.done = threading.Event()
        self.response: httpx.Response | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with self.platform.client(timeout=self.wait_s + 30) as client:
                self.response = client.post(self.path, json={**self.options, "wait": self.wait_s})
        except BaseException as exc:  # reported by the test
            self.error = exc
        finally:
            self.done.set()

    def result(self, timeout: float) -> httpx.Response:
        assert self.done.wait(timeout), f"the waiting get did not answer within {timeout}s"
        assert self.error is None, repr(self.error)
        assert self.response is not None
        return self.response


def start_waiting_get(platform, http, broker: str, queue: str, *, wait: float) -> PendingGet:
    """Start a get with ``wait`` on an empty queue and return once the server is known to be
    handling it. Proof: the get names a connection and ``commit_first``, so the server first
    commits that connection's unit of work (which holds a put on another queue); once
    GET /api/transactions/{id}/ shows it committed, the get is inside the server, waiting."""
    side = http.post(f"/api/brokers/{broker}/queues/", json={"name": f"SIDE{next(_clients)}"})
    assert side.status_code == 201, side.text
    conn = http.post(f"/api/brokers/{broker}/connections/", json={"client_name": f"waiter{next(_clients)}"})
    assert conn.status_code == 201, conn.text
    conn_id = conn.json()["conn_id"]
    marker = http.post(
        f"/api/brokers/{broker}/queues/{side.json()['name']}/messages/",
        json={"body": "marker", "connection": conn_id, "syncpoint": "yes"},
    )
    assert marker.status_code == 201, marker.text
    txn = marker.json()["transaction"]
    assert txn and http.get(f"/api/transactions/{txn}/").json()["state"] == "active"

    pending = PendingGet(
        platform, f"/api/brokers/{broker}/queues/{queue}/get/", {"connection": conn_id, "commit_first": True}, wait
    )
    pending.start()

    def committed() -> bool:
        state = http.get(f"/api/transactions/{txn}/").json()["state"]
        if state != "committed" and pending.done.is_set():
            response = pending.response
            raise AssertionError(
                f"the waiting get ended before its commit_first showed: {pending.error!r} "
                f"{response.status_code if response else ''} {response.text if response else ''}"
            )
        return state == "committed"

    poll_until(committed, timeout=15, what="the waiting get's commit_first to commit its connection's unit of work")
    return pending


def test_waiting_get_is_woken_by_a_put_from_another_client(platform, http, live_broker):
    pending = start_waiting_get(platform, http, live_broker, "Q1", wait=5)
    assert not pending.done.is_set(), "the get with wait=5 answered before any message was put"
    with platform.client() as producer:
        put = producer.post(f"/api/brokers/{live_broker}/queues/Q1/messages/", json={"body": "wake up"})
    assert put.status_code == 201, put.text
    response = pending.result(timeout=30)
    assert response.status_code == 200, response.text
    messages = response.json()["messages"]
    assert [m["msg_id"] for m in messages] == [put.json()["msg_id"]]
    assert messages[0]["body"] == "wake up"
    assert http.get(f"/api/brokers/{live_broker}/queues/Q1/").json()["depth"] == 0


def test_other_requests_are_answered_while_a_get_waits(platform, http, live_broker):
    pending = start_waiting_get(platform, http, live_broker, "Q1", wait=10)
    with platform.client() as other:
        brokers = other.get("/api/brokers/")
        assert brokers.status_code == 200
        assert live_broker in [b["name"] for b in brokers.json()["results"]]
        assert not pending.done.is_set(), "GET /api/brokers/ was only answered after the waiting get had finished"

        other.post(f"/api/brokers/{live_broker}/queues/", json={"name": "BUSY"})
        put = other.post(f"/api/brokers/{live_broker}/queues/BUSY/messages/", json={"body": "elsewhere"})
        assert put.status_code == 201, put.text
        got = other.post(f"/api/brokers/{live_broker}/queues/BUSY/get/", json={})
        assert [m["body"] for m in got.json()["messages"]] == ["elsewhere"]
        assert not pending.done.is_set(), "a put and a get on another queue were only answered after the waiting get"

        # end the wait with a message rather than letting it run out
        wake = other.post(f"/api/brokers/{live_broker}/queues/Q1/messages/", json={"body": "done waiting"})
        assert wake.status_code == 201, wake.text
    response = pending.result(timeout=30)
    assert response.status_code == 200, response.text
    assert [m["body"] for m in response.json()["messages"]] == ["done waiting"]


def test_several_waiting_gets_each_get_one_message(platform, http, live_broker):
    waiters = [start_waiting_get(platform, http, live_broker, "Q1", wait=10) for _ in range(3)]
    assert not any(w.done.is_set() for w in waiters)
    put = http.post(
        f"/api/brokers/{live_broker}/queues/Q1/messages/", json={"messages": [{"body": f"m{i}"} for i in range(3)]}
    )
    assert put.status_code == 201, put.text
    bodies = []
    for waiter in waiters:
        response = waiter.result(timeout=30)
        assert response.status_code == 200, response.text
        bodies.extend(m["body"] for m in response.json()["messages"])
    assert sorted(bodies) == ["m0", "m1", "m2"]


def test_openapi_schema(platform, http):
    response = http.get("/api/schema/", headers={"Accept": "application/json"})
    assert response.status_code == 200, response.text[:500]
    document = response.json()
    assert str(document["openapi"]).startswith("3.")
    assert document["info"]["title"]
    assert any(path.startswith("/api/brokers/") for path in document["paths"])
    default = http.get("/api/schema/")
    assert default.status_code == 200 and "openapi" in default.text
    docs = http.get("/api/schema/docs/")
    assert docs.status_code == 200

"""What the session transport adds: pipelined puts under a unit of work (their errors
surface at the next call that waits; a get does not wait for them), many threads on one
session, and a new session after a drop."""

from __future__ import annotations

import itertools
import json
import socket
import threading

import pytest

from baton_client import Client, NetworkError, PendingPut, PutInhibited
from tests.integration.servers import poll_until

pytestmark = [pytest.mark.integration, pytest.mark.once]  # once: its servers use SQLite in either pass
_names = itertools.count(1)


@pytest.fixture
def session_client(platform):
    with Client(platform.url, platform.token, timeout=30) as c:
        assert c.transport == "session"
        yield c


@pytest.fixture
def broker(session_client):
    """A fresh broker with queue Q1 (these tests run on the session transport alone)."""
    name = f"SS{next(_names)}"
    session_client.define_broker(name, transaction_timeout_ms=60_000)
    session_client.define_queue(name, "Q1")
    return name


def test_puts_in_a_unit_of_work_are_pipelined_and_keep_their_order(session_client, broker):
    client = session_client
    with client.transaction(broker) as tx:
        puts = [tx.put("Q1", f"m{n}") for n in range(50)]
        assert all(isinstance(p, PendingPut) for p in puts)
        batch = tx.put("Q1", messages=["b1", "b2"])
    assert tx.state == "committed" and all(p.done() for p in puts)
    assert [m.text for m in batch] == ["b1", "b2"] and batch[0].transaction == tx.id
    got = client.get(broker, "Q1", batch=100)
    assert [m.text for m in got] == [f"m{n}" for n in range(50)] + ["b1", "b2"]
    assert [m.msg_id for m in got][:50] == [p.msg_id for p in puts]


def test_a_failed_pipelined_put_is_raised_by_the_commit_which_is_not_sent(session_client, broker):
    client = session_client
    client.define_queue(broker, "NOPUT", put_enabled=False)
    tx = client.transaction(broker)
    tx.put("Q1", "fine")
    failed = tx.put("NOPUT", "refused")
    with pytest.raises(PutInhibited) as info:
        tx.commit()
    assert info.value.status == 409 and info.value.details["pipelined_put"] is True
    assert tx.refresh().state == "active"  # nothing committed: the caller decides
    with pytest.raises(PutInhibited):
        failed.result()
    assert tx.rollback() == [] and client.display_queue(broker, "Q1")["depth"] == 0


def test_the_context_manager_rolls_back_when_a_pipelined_put_failed(session_client, broker):
    client = session_client
    client.define_queue(broker, "NOPUT", put_enabled=False)
    with pytest.raises(PutInhibited):
        with client.transaction(broker) as tx:
            tx.put("Q1", "fine")
            tx.put("NOPUT", "refused")
    assert tx.state == "rolled_back" and tx.refresh().reason == "client"
    assert client.display_queue(broker, "Q1")["depth"] == 0


def test_a_get_raises_the_error_of_a_put_already_answered_and_takes_nothing(session_client, broker):
    client = session_client
    client.define_queue(broker, "NOPUT", put_enabled=False)
    client.put(broker, "Q1", "waiting")
    tx = client.transaction(broker)
    failed = tx.put("NOPUT", "refused")
    poll_until(failed.done, timeout=30, what="the refused put's reply")
    with pytest.raises(PutInhibited) as info:
        tx.get("Q1")
    assert info.value.details["pipelined_put"] is True
    assert client.display_queue(broker, "Q1")["depth"] == 1  # the get was not sent
    assert tx.get("Q1").text == "waiting"  # the error was raised once
    assert tx.rollback() == [] and client.display_queue(broker, "Q1")["depth"] == 1


def test_a_get_does_not_wait_for_unanswered_puts_and_their_error_still_stops_the_commit(session_client, broker):
    """The get goes out at once unless the put's reply has come; either way nothing is lost:
    the messages it took come back with the rollback, and no commit goes out after the put
    failed."""
    client = session_client
    client.define_queue(broker, "NOPUT", put_enabled=False)
    for n in range(20):
        client.put(broker, "Q1", f"waiting {n}")
    raised_by_get = 0
    for _ in range(20):
        tx = client.transaction(broker)
        tx.put("NOPUT", "refused")
        try:
            got = tx.get("Q1")
        except PutInhibited:
            raised_by_get += 1
        else:
            assert got is not None and got.text.startswith("waiting")
            with pytest.raises(PutInhibited):
                tx.commit()
        assert tx.refresh().state == "active"
        tx.rollback()
        assert client.display_queue(broker, "Q1")["depth"] == 20
    assert raised_by_get < 20  # most gets went out before the put's reply came back


def test_threads_share_one_session(session_client, broker):
    client, errors = session_client, []

    def worker(n: int) -> None:
        try:
            for i in range(20):
                client.put(broker, "Q1", f"{n}.{i}")
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors, errors
    assert client.display_queue(broker, "Q1")["depth"] == 80


def test_a_waiting_get_does_not_hold_up_the_session(session_client, broker):
    client = session_client
    box: dict = {}
    thread = threading.Thread(target=lambda: box.setdefault("got", client.get(broker, "Q1", wait=20)))
    thread.start()
    # while the get waits on the server, the same session carries other requests
    client.put(broker, "Q1", "for the waiting get")
    thread.join(30)
    assert box["got"].text == "for the waiting get"


def test_a_dropped_session_fails_its_waiting_call_and_the_next_call_opens_a_new_one(session_client, broker):
    client = session_client
    client.put(broker, "Q1", "before")
    box: dict = {}

    def waiting_get() -> None:
        try:
            client.get(broker, "EMPTY.NEVER", wait=20)
        except NetworkError as exc:
            box["error"] = exc

    client.define_queue(broker, "EMPTY.NEVER")
    thread = threading.Thread(target=waiting_get)
    thread.start()
    poll_until(lambda: client._session._awaited, timeout=10, what="the get to be sent")
    client._session._ws.socket.shutdown(socket.SHUT_RDWR)  # the network breaks
    thread.join(30)
    assert isinstance(box.get("error"), NetworkError) and box["error"].status is None
    assert client.get(broker, "Q1").text == "before"


def test_open_opens_the_session_before_the_first_operation(platform, broker):
    """``Client.open``: the session is open (and takes replies batched) before any operation
    uses it; over REST it does nothing."""
    with Client(platform.url, platform.token, timeout=30) as client:
        assert client._session._ws is None
        assert client.open() is client
        ws = client._session._ws
        assert ws is not None and ws.subprotocol == "baton.batch.v2"
        with client.transaction(broker) as tx:
            tx.put("Q1", "first")
        assert client._session._ws is ws  # the same session served it
    with Client(platform.url, platform.token, timeout=30, transport="rest") as rest:
        assert rest.open() is rest and rest._session is None


def test_a_connection_that_drops_late_fails_only_the_requests_it_carried():
    """The reader of a broken connection may get to its end after the next call opened a
    new one (a send that found the old one broken let it): only what went on the old one
    fails."""
    from concurrent.futures import Future

    from baton_client.session import Session

    class Connection:
        closed = False

        def close(self) -> None:
            self.closed = True

    session = Session("http://127.0.0.1:9", "token")
    old, new = Connection(), Connection()
    on_old, on_new = Future(), Future()
    session._ws = new
    session._awaited = {1: on_old, 2: on_new}
    session._sent_on = {1: old, 2: new}
    session._dropped(old)
    assert isinstance(on_old.exception(timeout=0), NetworkError)
    assert not on_new.done()
    assert session._ws is new and session._awaited == {2: on_new} and session._sent_on == {2: new}
    assert old.closed and not new.closed


# --- puts held back while one is unanswered (baton_client.session, ``defer``) ---------------


class _Wire:
    """A connection that keeps the frames sent (decoded)."""

    subprotocol = "baton.batch.v2"

    def __init__(self) -> None:
        self.frames: list = []

    def send(self, text: str) -> None:
        self.frames.append(json.loads(text))

    def close(self) -> None:
        pass


def _session_on(wire: _Wire):
    from baton_client.session import Session

    session = Session("http://127.0.0.1:9", "token")
    session._ws = wire
    return session


def _sent(wire: _Wire) -> list:
    """Each frame's request id, or the list of them for an array frame."""
    return [[r["id"] for r in f] if isinstance(f, list) else f["id"] for f in wire.frames]


def test_deferrable_requests_sent_while_one_is_unanswered_go_together_when_it_is():
    wire = _Wire()
    session = _session_on(wire)
    first = session.send("put", {"n": 0}, defer=True)
    held = [session.send("put", {"n": n}, defer=True) for n in (1, 2)]
    assert _sent(wire) == [1] and not any(f.done() for f in held)
    session._replied(wire, json.dumps({"re": 1, "status": 201}))
    assert first.result(0)["status"] == 201
    assert _sent(wire) == [1, [2, 3]] and [r["n"] for r in wire.frames[1]] == [1, 2]
    session._replied(wire, json.dumps([{"re": 2, "status": 201}, {"re": 3, "status": 201}]))
    assert all(f.result(0)["status"] == 201 for f in held)
    session.send("put", {"n": 3}, defer=True)
    assert _sent(wire) == [1, [2, 3], 4]  # nothing unanswered: it goes at once


def test_a_request_not_deferrable_takes_the_held_ones_before_it_in_its_frame():
    """Order is kept: what was held goes first, in the same frame; the request that is not
    deferrable does not hold back later puts while it waits (a get with a long wait)."""
    wire = _Wire()
    session = _session_on(wire)
    session.send("put", {}, defer=True)
    session.send("put", {}, defer=True)
    session.send("get", {"wait": 30})
    assert _sent(wire) == [1, [2, 3]]
    session._replied(wire, json.dumps([{"re": 1, "status": 201}, {"re": 2, "status": 201}]))
    session.send("put", {}, defer=True)
    assert _sent(wire) == [1, [2, 3], 4]  # the get (3) is still unanswered


def test_waiting_for_a_held_reply_sends_it_first():
    wire = _Wire()
    session = _session_on(wire)
    session.send("put", {}, defer=True)
    held = session.send("put", {"n": 1}, defer=True)
    box: dict = {}
    waiter = threading.Thread(target=lambda: box.setdefault("body", session.result("put", held)))
    waiter.start()
    poll_until(lambda: len(wire.frames) == 2, timeout=10, what="the held put to be sent")
    assert _sent(wire) == [1, 2]  # alone: a frame of its own
    session._replied(wire, json.dumps({"re": 2, "status": 201, "msg_id": "m"}))
    waiter.join(10)
    assert box["body"] == {"msg_id": "m"}


@pytest.mark.parametrize("subprotocol", ["baton.batch", None])
def test_a_server_without_arrays_gets_the_held_requests_one_a_frame(subprotocol):
    wire = _Wire()
    wire.subprotocol = subprotocol
    session = _session_on(wire)
    for _ in range(3):
        session.send("put", {}, defer=True)
    session._replied(wire, json.dumps({"re": 1, "status": 201}))
    assert _sent(wire) == [1, 2, 3]


def test_a_drop_fails_the_held_requests_which_are_never_sent():
    wire = _Wire()
    session = _session_on(wire)
    sent = session.send("put", {}, defer=True)
    held = session.send("put", {}, defer=True)
    session._dropped(wire)
    assert isinstance(sent.exception(0), NetworkError) and isinstance(held.exception(0), NetworkError)
    assert session._held == [] and session._deferred_out == set() and _sent(wire) == [1]

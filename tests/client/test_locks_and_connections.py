"""Peek-lock receipts and connections through the client."""

from __future__ import annotations

import time

import pytest

from baton_client import Lock, NotFound

pytestmark = [pytest.mark.integration, pytest.mark.once]  # once: its servers use SQLite in either pass


def test_peek_lock_abandon_renew_complete(client, broker):
    put = client.put(broker, "Q1", "locked one")
    first = client.get(broker, "Q1", mode="peek_lock")
    assert first.msg_id == put.msg_id and first.lock_token and first.locked_until is not None
    assert first.delivery_count == 1 and isinstance(first.receipt, Lock)
    shown = client.display_queue(broker, "Q1")
    assert (shown["depth"], shown["locked"]) == (1, 1)
    assert client.get(broker, "Q1", mode="peek_lock") is None, "a locked message is passed over"

    before = first.locked_until
    assert first.receipt.renew() >= before and first.locked_until >= before
    assert first.abandon() == "available"

    second = client.get(broker, "Q1", mode="peek_lock")
    assert second.msg_id == put.msg_id and second.delivery_count == 2 and second.lock_token != first.lock_token
    receipt = second.receipt
    assert receipt.complete() == "completed" and receipt.outcome == "completed"
    assert client.display_queue(broker, "Q1")["depth"] == 0
    with pytest.raises(NotFound):
        receipt.renew()
    with pytest.raises(NotFound):
        client.lock(first.lock_token).abandon()


def test_peek_lock_complete_under_a_unit_of_work(client, broker):
    put = client.put(broker, "Q1", messages=["kept locked", "removed on commit"])
    batch = client.get(broker, "Q1", mode="peek_lock", batch=2)
    assert [m.msg_id for m in batch] == [m.msg_id for m in put]

    rolled_back = client.transaction(broker)
    assert batch[0].complete(transaction=rolled_back) == "pending_commit"
    rolled_back.rollback()
    with client.transaction(broker) as tx:
        assert batch[1].receipt.complete(tx) == "pending_commit"
        assert client.display_queue(broker, "Q1")["depth"] == 2
    assert client.display_queue(broker, "Q1")["depth"] == 1
    # the completion rolled back: the first message is still locked, and can be completed now
    assert client.get(broker, "Q1") is None
    assert batch[0].complete() == "completed"
    assert client.display_queue(broker, "Q1")["depth"] == 0


def test_peek_lock_dead_letter(client, broker):
    put = client.put(broker, "Q1", "poison")
    locked = client.get(broker, "Q1", mode="peek_lock")
    assert locked.dead_letter("cannot parse") == "SYSTEM.DEAD.LETTER.QUEUE"
    assert client.display_queue(broker, "Q1")["depth"] == 0
    dead = client.get(broker, "SYSTEM.DEAD.LETTER.QUEUE")
    assert dead.text == "poison" and dead.dead_letter_reason == "cannot parse" and dead.dead_letter_from == "Q1"
    assert dead.msg_id == put.msg_id


def test_a_message_got_destructively_has_no_receipt(client, broker):
    client.put(broker, "Q1", "plain")
    message = client.get(broker, "Q1")
    assert message.receipt is None
    with pytest.raises(ValueError):
        message.complete()


def test_connections_remember_last_put_and_got(client, broker):
    conn = client.connect(broker, "billing-app")
    assert len(conn.conn_id) == 48 and conn.client_name == "billing-app"
    assert (conn.last_put_msg_id, conn.last_got_msg_id) == (None, None)
    put = client.put(broker, "Q1", "from billing", connection=conn)
    assert conn.refresh().last_put_msg_id == put.msg_id
    got = conn.get("Q1")
    assert got.msg_id == put.msg_id
    conn.close()

    with client.connect(broker, "billing-app") as again:
        assert again.conn_id != conn.conn_id
        assert (again.last_put_msg_id, again.last_got_msg_id) == (put.msg_id, got.msg_id)
    other = client.connect(broker, "another-app")
    assert (other.last_put_msg_id, other.last_got_msg_id) == (None, None)
    other.close()


def test_connection_unit_of_work_commit_first_and_close(client, broker):
    with client.connect(broker, "syncpoint-app") as conn:
        first = conn.put("Q1", "first", syncpoint="yes")
        assert first.transaction and conn.refresh().current_transaction == first.transaction
        assert client.get(broker, "Q1") is None, "not committed yet"
        # commit_first commits the connection's unit of work, then gets in one call
        got = conn.get("Q1", commit_first=True)
        assert got.msg_id == first.msg_id
        assert client.display_transaction(first.transaction).state == "committed"
        assert conn.refresh().last_put_msg_id == first.msg_id

        doomed = conn.put("Q1", "second", syncpoint="yes")
        assert doomed.transaction != first.transaction
    # closing the connection rolled its open unit of work back
    shown = client.display_transaction(doomed.transaction)
    assert (shown.state, shown.reason) == ("rolled_back", "connection closed")
    assert client.get(broker, "Q1") is None


def test_close_a_stomp_connection(client, platform, broker):
    """A STOMP connection (over WebSocket at /stomp/) closed through the client: its client
    gets the ERROR, and its session is unknown afterwards."""
    from websockets.sync.client import connect

    from stomp_server.frames import Frame, FrameParser, frame_encode

    url = platform.url.replace("http://", "ws://") + "/stomp/"
    with connect(url, subprotocols=["v12.stomp"], open_timeout=20) as ws:
        parser = FrameParser(max_frame=1 << 20, version="1.2")

        def next_frame() -> Frame:
            frames = parser.feed(b"")
            while not frames:
                data = ws.recv(timeout=20)
                frames = parser.feed(data if isinstance(data, bytes) else data.encode())
            return frames[0]

        headers = [("accept-version", "1.2"), ("host", broker), ("login", "tester"), ("passcode", platform.token)]
        ws.send(frame_encode(Frame("CONNECT", [*headers, ("heart-beat", "0,0")]), version="1.2"))
        session = next_frame().get("session")
        # the serving process lists its connections every couple of seconds: until then it is unknown
        deadline = time.monotonic() + 20
        while True:
            try:
                closed = client.close_stomp_connection(session)
                break
            except NotFound:
                assert time.monotonic() < deadline, "the connection was never listed"
                time.sleep(0.2)  # polling the registry's next refresh
        assert (closed["session"], closed["close_requested_by"]) == (session, "tester")
        error = next_frame()
        assert (error.command, error.get("message")) == ("ERROR", "Closed by an operator.")
    with pytest.raises(NotFound):
        client.close_stomp_connection("0" * 32)

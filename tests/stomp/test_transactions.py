"""A STOMP transaction's unit of work is begun when first needed: by its first SEND's put,
a pre-emptive get under it, or a COMMIT with acknowledgements to complete under it. Its ACKs
wait for its COMMIT (their locks renewed meanwhile); one that only acknowledged commits
them as one durable completion, all or none (docs/stomp.md, "Transactions")."""

from __future__ import annotations

from brokers.models import Message
from transactions.models import Transaction

from .conftest import Raw, bye, connected, until
from .test_stomp_py import available, put


def _units_of_work() -> int:
    return Transaction.objects.count()


def _one_delivered(port: int, token: str, body: str):
    """A connection, its listener and the MESSAGE of ``body``, put and delivered to a
    client-individual subscription on Q1."""
    put(body)
    conn, seen = connected(port, token)
    conn.subscribe("/queue/Q1", id="s1", ack="client-individual")
    [m] = seen.wait_messages(1)
    return conn, seen, m


def test_a_transaction_begins_its_unit_of_work_with_its_first_send(stomp_port, stomp_broker, token):
    conn, seen = connected(stomp_port, token)
    before = _units_of_work()
    conn.begin("t1", receipt="b")
    seen.wait(lambda: "b" in seen.receipts)
    assert _units_of_work() == before  # BEGIN alone writes nothing
    for n in range(3):
        conn.send("/queue/Q1", f"m{n}", transaction="t1", receipt=f"s{n}")
    seen.wait(lambda: "s2" in seen.receipts)
    txn = Transaction.objects.order_by("-created_at").first()
    assert _units_of_work() == before + 1  # one unit of work, begun by the first put
    assert Message.objects.filter(put_transaction_id=txn.id).count() == 3
    assert available() == []  # nothing visible before the COMMIT
    conn.commit("t1", receipt="c")
    seen.wait(lambda: "c" in seen.receipts)
    assert available() == [b"m0", b"m1", b"m2"]
    conn.begin("t2")
    conn.commit("t2", receipt="c2")  # an empty transaction: nothing to do
    conn.begin("t3")
    conn.abort("t3", receipt="a3")
    seen.wait(lambda: "a3" in seen.receipts)
    assert _units_of_work() == before + 1 and seen.errors == []
    bye(conn)


def test_a_transaction_that_only_acknowledged_completes_at_its_commit(stomp_port, stomp_broker, token):
    put("a", "b", "c")
    conn, seen = connected(stomp_port, token)
    conn.subscribe("/queue/Q1", id="s1", ack="client-individual")
    frames = seen.wait_messages(3)
    before = _units_of_work()
    conn.begin("t1")
    for frame in frames:
        conn.ack(frame.headers["ack"], transaction="t1", receipt=frame.headers["ack"])
    seen.wait(lambda: frames[-1].headers["ack"] in seen.receipts)
    ids = [f.headers["message-id"] for f in frames]
    # acknowledged under the transaction: still there, still locked, until its COMMIT
    assert Message.objects.filter(msg_id__in=ids, lock_token__isnull=False, get_transaction_id=None).count() == 3
    conn.commit("t1", receipt="c")
    seen.wait(lambda: "c" in seen.receipts)
    assert not Message.objects.filter(msg_id__in=ids).exists()
    assert _units_of_work() == before  # one durable completion, no unit of work
    bye(conn)
    assert seen.errors == []


def test_a_lock_lost_before_the_commit_completes_none(stomp_port, stomp_broker, token):
    put("a", "b")
    raw = Raw(stomp_port)
    raw.connect(token)
    raw.send(b"SUBSCRIBE\nid:s1\ndestination:/queue/Q1\nack:client-individual\n\n\0")
    first, second = raw.next(), raw.next()
    raw.send(
        f"BEGIN\ntransaction:t1\n\n\0ACK\nid:{first.get('ack')}\ntransaction:t1\n\n\0"
        f"ACK\nid:{second.get('ack')}\ntransaction:t1\nreceipt:r1\n\n\0".encode()
    )
    assert raw.next().command == "RECEIPT"
    Message.objects.filter(msg_id=second.get("message-id")).update(locked_until="2000-01-01T00:00:00Z")
    raw.send(b"COMMIT\ntransaction:t1\nreceipt:c1\n\n\0")
    [error] = [f for f in raw.closed_after() if f.command == "ERROR"]
    assert error.get("x-baton-code") == "lock_lost" and error.get("receipt-id") == "c1"
    raw.close()
    # nothing completed: a is given back, b (its lock lapsed) is still there
    until(lambda: b"a" in available(), what="a given back")
    assert Message.objects.filter(msg_id=second.get("message-id")).exists()


def test_the_locks_of_messages_acknowledged_in_an_open_transaction_are_renewed(stomp_port, stomp_broker, token):
    from brokers.services.queues import queue_define

    queue_define(broker="QM1", name="SHORT", lock_duration_ms=300)
    put("slow", queue="SHORT")
    conn, seen = connected(stomp_port, token)
    conn.subscribe("/queue/SHORT", id="s", ack="client-individual")
    [m] = seen.wait_messages(1)
    msg_id = m.headers["message-id"]
    conn.begin("t1")
    conn.ack(m.headers["ack"], transaction="t1", receipt="a")
    seen.wait(lambda: "a" in seen.receipts)
    first = Message.objects.get(msg_id=msg_id).locked_until
    until(lambda: Message.objects.get(msg_id=msg_id).locked_until > first, what="a renewal")
    conn.commit("t1", receipt="c")  # after the first lock's end: still this client's
    seen.wait(lambda: "c" in seen.receipts)
    bye(conn)
    assert seen.errors == [] and not Message.objects.filter(msg_id=msg_id).exists()


def test_unsubscribe_completes_its_acknowledged_messages_under_the_unit_of_work(stomp_port, stomp_broker, token):
    conn, seen, m = _one_delivered(stomp_port, token, "x")
    conn.begin("t1")
    conn.ack(m.headers["ack"], transaction="t1")
    conn.unsubscribe("s1", receipt="u")
    seen.wait(lambda: "u" in seen.receipts)
    # no subscription renews its lock now: completed under the transaction's unit of work
    row = Message.objects.get(msg_id=m.headers["message-id"])
    assert row.get_transaction_id is not None
    conn.abort("t1", receipt="a")  # and ABORT still gives it back
    seen.wait(lambda: "a" in seen.receipts)
    until(lambda: available() == [b"x"], what="x given back")
    bye(conn)
    assert seen.errors == []


def test_a_connection_that_ends_gives_back_what_its_open_transaction_acknowledged(stomp_port, stomp_broker, token):
    conn, seen, m = _one_delivered(stomp_port, token, "x")
    conn.begin("t1")
    conn.ack(m.headers["ack"], transaction="t1", receipt="a")
    seen.wait(lambda: "a" in seen.receipts)
    bye(conn)  # t1 never committed
    assert available() == [b"x"] and seen.errors == []

"""Pre-emptive STOMP subscriptions (x-baton-preemptive:true) with stomp.py against the
server: under the consumer's open transaction they take another unit of work's uncommitted
message, linking the two (held commit, cascading backout); without one they get committed
messages only."""

from __future__ import annotations

import pytest

from brokers.services.messages import message_browse, message_put
from brokers.services.message_input import MessageInput
from brokers.services.queues import queue_define

from .conftest import bye, connected


def available(queue: str = "Q1") -> list[bytes]:
    return [bytes(m.body) for m in message_browse(broker="QM1", queue=queue).messages]


def round_trip(conn, seen, receipt: str) -> None:
    """A frame with a receipt after the others: once answered, the server applied them."""
    conn.send("/queue/PROBE", "", headers={"receipt": receipt})
    seen.wait(lambda: receipt in seen.receipts or seen.errors)


def linked(stomp_port, token, *, commit: bool = True):
    """A producer with an uncommitted put on Q1, and a consumer that took it pre-emptively
    under its transaction t1, ACKed it, put a reply on Q2 under t1 and (``commit``) sent
    COMMIT, held."""
    queue_define(broker="QM1", name="Q2")
    queue_define(broker="QM1", name="PROBE")
    producer, produced = connected(stomp_port, token)
    producer.begin("p1")
    producer.send("/queue/Q1", "order", transaction="p1", receipt="sent")
    produced.wait(lambda: "sent" in produced.receipts)
    consumer, seen = connected(stomp_port, token)
    consumer.subscribe("/queue/Q1", id="s1", ack="client-individual", headers={"x-baton-preemptive": "true"})
    round_trip(consumer, seen, "subscribed")
    assert seen.messages == []  # no transaction open: committed messages only
    consumer.begin("t1")
    [m] = seen.wait_messages(1)
    assert (m.body, m.headers["transaction"]) == ("order", "t1")
    consumer.ack(m.headers["ack"], transaction="t1")
    consumer.send("/queue/Q2", "reply", transaction="t1")
    if commit:
        consumer.commit("t1", receipt="committed")
    round_trip(consumer, seen, "after")
    assert "committed" not in seen.receipts and seen.errors == []  # held: the producer has not committed
    assert available("Q2") == []
    return producer, produced, consumer, seen


def test_commit_is_held_until_the_producer_commits(stomp_port, stomp_broker, token):
    producer, produced, consumer, seen = linked(stomp_port, token)
    producer.commit("p1", receipt="p-committed")
    seen.wait(lambda: "committed" in seen.receipts)
    assert seen.errors == [] and available("Q1") == [] and available("Q2") == [b"reply"]
    bye(consumer)
    bye(producer)


@pytest.mark.parametrize("committing", [True, False], ids=["while-held", "before-commit"])
def test_the_producers_abort_backs_the_consumer_out(stomp_port, stomp_broker, token, committing):
    producer, produced, consumer, seen = linked(stomp_port, token, commit=committing)
    producer.abort("p1", receipt="p-aborted")
    if not committing:
        produced.wait(lambda: "p-aborted" in produced.receipts)
        consumer.commit("t1", receipt="committed")
    seen.wait(lambda: seen.errors)
    [error] = seen.errors
    assert (error.headers["x-baton-code"], error.headers["receipt-id"]) == ("transaction_backed_out", "committed")
    assert "committed" not in seen.receipts
    assert available("Q1") == [] and available("Q2") == []  # the order vanished, and the work on it
    bye(producer)


def test_abort_gives_back_and_acks_must_name_the_transaction(stomp_port, stomp_broker, token):
    queue_define(broker="QM1", name="PROBE")
    message_put(broker="QM1", queue="Q1", messages=[MessageInput(body=b"a"), MessageInput(body=b"b")])
    consumer, seen = connected(stomp_port, token)
    consumer.begin("t1")
    consumer.subscribe(
        "/queue/Q1", id="s1", ack="client", headers={"x-baton-preemptive": "true", "prefetch-count": "1"}
    )
    [a] = seen.wait_messages(1)
    assert a.headers["transaction"] == "t1"
    consumer.abort("t1", receipt="aborted")  # gives it back; then peek-locked, as any subscription
    [b] = seen.wait_messages(2)[1:]
    seen.wait(lambda: "aborted" in seen.receipts)
    assert "transaction" not in b.headers
    assert (b.body, b.headers.get("redelivered")) == ("a", "true")
    consumer.ack(b.headers["ack"], receipt="acked")
    [c] = seen.wait_messages(3)[2:]
    assert c.body == "b" and "acked" in seen.receipts
    consumer.begin("t2")
    consumer.ack(c.headers["ack"], transaction="t2", receipt="c-acked")  # a peek-locked one, completed under t2
    seen.wait(lambda: "c-acked" in seen.receipts)
    message_put(broker="QM1", queue="Q1", messages=[MessageInput(body=b"d")])
    [d] = seen.wait_messages(4)[3:]
    assert (d.body, d.headers["transaction"]) == ("d", "t2")
    consumer.ack(d.headers["ack"], receipt="refused")  # not under t2: refused, nothing applied
    seen.wait(lambda: seen.errors)
    assert seen.errors[0].headers["receipt-id"] == "refused"
    seen.wait(lambda: seen.disconnected)  # an ERROR closes the connection: the server's to close, not ours
    assert sorted(_until_available(2)) == [b"b", b"d"]  # t2 rolled back: c's completion and d's get undone


def test_a_nack_under_the_transaction_refuses_its_commit(stomp_port, stomp_broker, token):
    message_put(broker="QM1", queue="Q1", messages=[MessageInput(body=b"a")])
    consumer, seen = connected(stomp_port, token)
    consumer.begin("t1")
    consumer.subscribe("/queue/Q1", id="s1", ack="client-individual", headers={"x-baton-preemptive": "true"})
    [a] = seen.wait_messages(1)
    consumer.nack(a.headers["ack"], transaction="t1")
    consumer.commit("t1", receipt="c")
    seen.wait(lambda: seen.errors)
    assert seen.errors[0].headers["x-baton-code"] == "unsettled_deliveries"
    seen.wait(lambda: seen.disconnected)
    assert _until_available(1) == [b"a"]


def test_preemptive_needs_client_acknowledgements(stomp_port, stomp_broker, token):
    consumer, seen = connected(stomp_port, token)
    consumer.subscribe("/queue/Q1", id="s1", ack="auto", headers={"x-baton-preemptive": "true", "receipt": "r"})
    seen.wait(lambda: seen.errors)
    assert seen.errors[0].headers["x-baton-code"] == "invalid" and "ack" in seen.errors[0].body


def _until_available(n: int) -> list[bytes]:
    from .conftest import until

    def check():
        found = available()
        return found if len(found) >= n else None

    return until(check, what="the rollback")

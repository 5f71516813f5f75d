"""STOMP destinations as RabbitMQ users write them: hyphens in queue names and in reply-to."""

from __future__ import annotations

from brokers.services.messages import message_browse
from brokers.services.queues import queue_define

from .conftest import bye, connected


def test_a_hyphenated_queue_is_sent_to_and_subscribed(stomp_port, stomp_broker, token):
    queue_define(broker="QM1", name="ack-test")
    conn, seen = connected(stomp_port, token)
    conn.send("/queue/ack-test", "hello", headers={"receipt": "r1", "reply-to": "/queue/reply-q"})
    seen.wait(lambda: "r1" in seen.receipts)
    [stored] = message_browse(broker="QM1", queue="ack-test").messages
    assert stored.reply_to_queue == "reply-q"
    conn.subscribe("/queue/ack-test", id="s-1", ack="client-individual")
    [m] = seen.wait_messages(1)
    assert (m.body, m.headers["destination"], m.headers["subscription"]) == ("hello", "/queue/ack-test", "s-1")
    conn.ack(m.headers["ack"], receipt="r2")
    seen.wait(lambda: "r2" in seen.receipts)
    bye(conn)
    assert seen.errors == [] and message_browse(broker="QM1", queue="ack-test").messages == []

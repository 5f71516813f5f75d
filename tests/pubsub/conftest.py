"""Helpers for the publish/subscribe tests: publishing text, reading what reached a queue."""

from __future__ import annotations

import pytest

from brokers.services.message_input import MessageInput
from brokers.services.messages import message_browse
from brokers.services.queues import queue_define
from pubsub.services.publications import publication_publish


def publish(topic: str, body: str = "x", *, retain: bool = False, transaction_id: str | None = None, **fields):
    return publication_publish(
        broker="QM1",
        topic=topic,
        message=MessageInput(body=body.encode(), **fields),
        retain=retain,
        transaction_id=transaction_id,
    )


def received(queue: str) -> list[tuple[str, str, bool]]:
    """(topic, body, is_retained) of every committed message on the queue, in order."""
    rows = message_browse(broker="QM1", queue=queue, limit=1000).messages
    return [(m.properties["topic"], bytes(m.body).decode(), m.properties["is_retained"]) for m in rows]


@pytest.fixture
def queues(broker):
    for name in ("S1", "S2", "S3"):
        queue_define(broker="QM1", name=name)
    return ["S1", "S2", "S3"]

"""The journal follower's rate counts: a step's put or get of several messages is one
journal row, and the overview's counts add up the messages it stands for."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync, sync_to_async

from brokers.services.message_input import MessageInput
from brokers.services.messages import message_get, message_put
from dashboard.follower import OVERVIEW_GROUP, Follower
from transactions.models import JournalEvent

pytestmark = pytest.mark.django_db


class Layer:
    def __init__(self) -> None:
        self.sent: list[tuple[str, dict]] = []

    async def group_send(self, group: str, message: dict) -> None:
        self.sent.append((group, message))


def test_the_overview_counts_each_message_of_a_step(two_brokers, monkeypatch):
    # Channels' wrapper closes the thread's database connections around each call: the
    # test's own connection (its transaction) must stay open.
    monkeypatch.setattr("dashboard.follower.database_sync_to_async", sync_to_async)
    position = JournalEvent.objects.order_by("-id").values_list("id", flat=True).first() or 0
    message_put(broker="SEEN", queue="Q1", messages=[MessageInput(body=b"a")] * 3)
    message_put(broker="SEEN", queue="Q1", messages=[MessageInput(body=b"b")])
    assert len(message_get(broker="SEEN", queue="Q1", batch=3).messages) == 3
    layer = Layer()
    moved_to, _ = async_to_sync(Follower()._tick)(layer, position, None)
    [counts] = [message["counts"] for group, message in layer.sent if group == OVERVIEW_GROUP]
    assert counts == {"SEEN": {"put": 4, "get": 3}}
    assert moved_to == JournalEvent.objects.order_by("-id").values_list("id", flat=True).first()

"""The broker page's connections and the queue page's consumers, live: who may follow them,
the follower pushing them when they changed (and only then), and closing a STOMP
connection from the console (marked for its serving process; tests/stomp/test_close.py
has the process's side)."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from asgiref.sync import async_to_sync, sync_to_async

from brokers.services.access import grant_actions
from dashboard.follower import Follower, connections_group, connections_read
from stomp_server.models import StompClient

from .conftest import make_user
from .test_trust import first_frame

pytestmark = pytest.mark.django_db(transaction=True)
SESSION = "a" * 32


class Layer:
    def __init__(self) -> None:
        self.sent: list[tuple[str, dict]] = []

    async def group_send(self, group: str, message: dict) -> None:
        self.sent.append((group, message))


def _stomp_client(**kwargs) -> StompClient:
    row = {
        "session": SESSION,
        "process": "elsewhere:1",
        "transport": "tcp",
        "peer": "127.0.0.1:5000",
        "username": "app",
        "broker": "SEEN",
        "version": "1.2",
        "connected_at": datetime(2026, 12, 6, 5, 0, tzinfo=timezone.utc),
        "subscriptions": [{"id": "s1", "destination": "/queue/Q1", "ack": "client", "unacknowledged": 2}],
        **kwargs,
    }
    return StompClient.objects.create(**row)


def test_the_follower_pushes_a_queues_consumers_when_they_change(two_brokers, monkeypatch):
    monkeypatch.setattr("dashboard.follower.database_sync_to_async", sync_to_async)
    follower, layer = Follower(), Layer()
    follower.watch_connections(("SEEN", "Q1"), connections_read("SEEN", "Q1"))
    follower.watch_connections(("SEEN", ""), connections_read("SEEN"))
    push = async_to_sync(follower._connections)
    push(layer)
    assert layer.sent == []  # nothing changed since the sockets' snapshots
    _stomp_client()
    push(layer)
    sent = dict(layer.sent)
    [sub] = sent[connections_group("SEEN", "Q1")]["data"]["stomp"]
    assert (sub["session"], sub["subscription"], sub["unacknowledged"], sub["closing"]) == (SESSION, "s1", 2, False)
    [conn] = sent[connections_group("SEEN")]["data"]["stomp"]
    assert (conn["name"], conn["username"], conn["connected_at"]) == (SESSION, "app", "2026-12-06T05:00:00+00:00")
    layer.sent.clear()
    push(layer)
    assert layer.sent == []
    StompClient.objects.filter(session=SESSION).delete()
    push(layer)
    assert {g: m["data"]["stomp"] for g, m in layer.sent} == {
        connections_group("SEEN", "Q1"): [],
        connections_group("SEEN"): [],
    }


def test_who_may_follow_connections(two_brokers, client):
    make_user("viewer")
    grant_actions(username="viewer", broker="SEEN", actions=["browse"])
    grant_actions(username="viewer", broker="HIDDEN", queue="Q1", actions=["browse"])
    client.login(username="viewer", password="pw-for-tests-123")

    def opened(path: str):
        frame = first_frame(client, path, "http://localhost")
        return frame if isinstance(frame, tuple) else frame["type"]

    assert opened("/ws/brokers/SEEN/connections/") == "connections"
    assert opened("/ws/brokers/SEEN/queues/Q1/consumers/") == "connections"
    assert opened("/ws/brokers/HIDDEN/queues/Q1/consumers/") == "connections"
    assert opened("/ws/brokers/HIDDEN/queues/Q2/consumers/") == ("closed", 4403)
    assert opened("/ws/brokers/HIDDEN/connections/") == ("closed", 4403)  # the broker is not seen whole


def test_closing_a_stomp_connection_from_the_console(two_brokers, client):
    _stomp_client()
    make_user("operator")
    grant_actions(username="operator", broker="SEEN", actions=["browse", "put", "get"])
    client.login(username="operator", password="pw-for-tests-123")
    page = client.get("/brokers/SEEN/queues/Q1/").content.decode()
    assert f'data-row="stomp:{SESSION}/s1"' in page and f"/brokers/SEEN/stomp/{SESSION}/close/" not in page
    refused = client.post(f"/brokers/SEEN/stomp/{SESSION}/close/", {"queue": "Q1"})
    assert refused.status_code == 404 and StompClient.objects.get().close_requested_at is None

    make_user("boss")
    grant_actions(username="boss", broker="SEEN", actions=["admin"])
    client.login(username="boss", password="pw-for-tests-123")
    page = client.get("/brokers/SEEN/").content.decode()
    assert f"/brokers/SEEN/stomp/{SESSION}/close/" in page
    answer = client.post(f"/brokers/SEEN/stomp/{SESSION}/close/", {"queue": "Q1"})
    assert answer.status_code == 302 and answer.url == "/brokers/SEEN/queues/Q1/"
    row = StompClient.objects.get()
    assert row.close_requested_by == "boss" and row.close_requested_at is not None
    assert connections_read("SEEN", "Q1")["stomp"][0]["closing"] is True
    assert "closing…" in client.get("/brokers/SEEN/queues/Q1/").content.decode()


def test_closing_a_stomp_connection_from_the_overview(two_brokers, client):
    """The overview's STOMP table offers Close on the rows the user may close (its own, the
    brokers it administers), and the close comes back to the overview."""
    _stomp_client()
    _stomp_client(session="b" * 32, username="operator")
    make_user("operator")
    grant_actions(username="operator", broker="SEEN", actions=["browse", "put", "get"])
    client.login(username="operator", password="pw-for-tests-123")
    page = client.get("/").content.decode()
    assert f"/brokers/SEEN/stomp/{'b' * 32}/close/" in page  # its own
    assert f"/brokers/SEEN/stomp/{SESSION}/close/" not in page  # another user's, on a broker it does not administer
    answer = client.post(f"/brokers/SEEN/stomp/{'b' * 32}/close/", {"back": "overview"})
    assert answer.status_code == 302 and answer.url == "/"
    assert StompClient.objects.get(session="b" * 32).close_requested_by == "operator"
    assert "closing…" in client.get("/").content.decode()

    make_user("boss")
    grant_actions(username="boss", broker="SEEN", actions=["admin"])
    client.login(username="boss", password="pw-for-tests-123")
    assert f"/brokers/SEEN/stomp/{SESSION}/close/" in client.get("/").content.decode()

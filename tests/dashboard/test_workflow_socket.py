"""The workflow instance page's socket: who may follow an instance, and the follower pushing
an instance's view when it changed (and only then)."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync, sync_to_async

from brokers.services.access import grant_actions
from brokers.services.message_input import MessageInput
from dashboard.consumers import _instance_seen
from dashboard.follower import Follower, workflow_group
from workflows.services.definitions import workflow_define
from workflows.services.instances import instance_start, workflow_abort

from .conftest import make_user

pytestmark = pytest.mark.django_db


class Layer:
    def __init__(self) -> None:
        self.sent: list[tuple[str, dict]] = []

    async def group_send(self, group: str, message: dict) -> None:
        self.sent.append((group, message))


@pytest.fixture
def instances(two_brokers):
    ids = {}
    for broker in ("SEEN", "HIDDEN"):
        workflow_define(broker=broker, name="w", steps=[{"name": "a", "queue": "Q1", "compensation_queue": "Q2"}])
        ids[broker] = instance_start(broker=broker, name="w", message=MessageInput(body=b"go")).pk
    return ids


def test_only_those_who_may_see_an_instance_follow_it(instances):
    watcher = make_user("watcher")
    grant_actions(username="watcher", broker="SEEN", actions=["browse"])
    seen = instances["SEEN"]
    view = _instance_seen(watcher, seen)
    assert (view["id"], view["state"], [s["state"] for s in view["steps"]]) == (seen, "running", ["pending"])
    assert _instance_seen(watcher, instances["HIDDEN"]) is None
    assert _instance_seen(watcher, "0" * 48) is None


def test_the_follower_pushes_a_watched_instance_when_it_changed(instances, monkeypatch):
    # Channels' wrapper closes the thread's database connections around each call: the
    # test's own connection (its transaction) must stay open.
    monkeypatch.setattr("dashboard.follower.database_sync_to_async", sync_to_async)
    follower, layer = Follower(), Layer()
    watched = instances["SEEN"]
    follower.watch(watched, _instance_seen(make_user("root", superuser=True), watched))
    push = async_to_sync(follower._workflows)
    push(layer, journal_moved=True)
    assert layer.sent == []  # nothing changed since the socket's snapshot
    workflow_abort(instance_id=watched, reason="withdrawn")
    push(layer, journal_moved=False)  # a history row was added
    [(group, message)] = layer.sent
    assert group == workflow_group(watched) and message["type"] == "workflow.changed"
    assert (message["instance"]["state"], message["instance"]["reason"]) == ("compensated", "withdrawn")
    push(layer, journal_moved=True)
    assert len(layer.sent) == 1  # the same view is not sent again
    follower.unwatch(watched)
    assert not follower.instances and watched not in follower.instances_sent


def test_the_follower_pushes_a_watched_workflow_list_when_a_count_changed(instances, monkeypatch):
    from dashboard.follower import workflows_group
    from dashboard.selectors import workflow_rows

    monkeypatch.setattr("dashboard.follower.database_sync_to_async", sync_to_async)
    follower, layer = Follower(), Layer()
    rows = workflow_rows(broker="SEEN")
    assert [(r["name"], r["instances"]["running"]) for r in rows] == [("w", 1)]
    follower.watch_list("SEEN", rows)
    push = async_to_sync(follower._workflows)
    push(layer, journal_moved=True)
    assert layer.sent == []
    instance_start(broker="SEEN", name="w", message=MessageInput(body=b"again"))
    push(layer, journal_moved=True)
    [(group, message)] = layer.sent
    assert group == workflows_group("SEEN") and message["type"] == "workflows.changed"
    assert message["workflows"][0]["instances"]["running"] == 2
    follower.unwatch_list("SEEN")
    assert not follower.workflow_lists and workflow_rows(broker="GONE") == []

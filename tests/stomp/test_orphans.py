"""The non-durable topic subscriptions (``stomp.<hash>``) a process that is gone left behind
are removed when the STOMP server starts; a live process's and durable ones are kept."""

from __future__ import annotations

import subprocess

import pytest

from brokers.models import Queue
from pubsub.models import Subscription
from stomp_server import engine
from stomp_server.orphans import stomp_orphans_removed
from stomp_server.registry import PROCESS

from .conftest import connected


@pytest.fixture
def left_behind(stomp_broker, token):
    """Three topic subscriptions defined as STOMP connections define them: one of a process
    that is gone, one of this (live) process, one durable."""
    from django.contrib.auth import get_user_model

    user = get_user_model().objects.get(username="tester")
    dead = _a_finished_pid()
    names = {}
    for label, durable in (("dead", False), ("live", False), ("durable", True)):
        names[label] = engine.subscription_name(user=user, connection=label, id="1", durable=durable)
        engine.topic_subscribed(user, broker="QM1", topic_filter="prices/#", name=names[label], durable=durable)
    queue = Queue.objects.get(broker__name="QM1", name=names["dead"])
    assert queue.description == f"STOMP subscription of {PROCESS} to prices/#"
    queue.description = queue.description.replace(PROCESS, f"{PROCESS.rpartition(':')[0]}:{dead}")
    queue.save(update_fields=["description"])
    return names


def _a_finished_pid() -> int:
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def test_the_servers_start_removes_what_a_gone_process_left(left_behind, stomp_port, token):
    kept = set(Queue.objects.filter(name__startswith="stomp.").values_list("name", flat=True))
    assert kept == {left_behind["live"], left_behind["durable"]}
    assert set(Subscription.objects.values_list("name", flat=True)) == kept
    conn, seen = connected(stomp_port, token)  # a live connection's subscription is kept too
    conn.subscribe("/topic/prices/#", id="s1", receipt="r")
    seen.wait(lambda: "r" in seen.receipts)
    assert stomp_orphans_removed() == 0
    assert Queue.objects.filter(name__startswith="stomp.").count() == 3

"""A Celery worker's warm shutdown (SIGTERM) ends the channel agents running in it: each
ends its run after the step under way and releases its lease, so the worker stops at once
and another worker's agent can take the channel over."""

from __future__ import annotations

import threading

import pytest
from celery.signals import worker_shutting_down
from django.db import connection

import brokers.channels.tasks  # noqa: F401 - connects the worker's shutdown signal
from brokers.channels.sender import AGENTS_STOP, channel_agent_run, channel_lease_acquire
from brokers.models import Channel
from brokers.services.messages import message_get, message_put
from tests.conftest import bodies, msgs
from tests.transfer.conftest import two_brokers
from tests.transfer.test_in_process import wait_until

pytestmark = pytest.mark.linked  # also run on PostgreSQL


@pytest.mark.django_db(transaction=True)
def test_a_worker_shutting_down_ends_its_agents_runs_and_frees_their_leases():
    name = two_brokers()
    results: dict = {}

    def run() -> None:
        try:
            results["ended"] = channel_agent_run(name=name, holder="worker-1", max_seconds=120)
        finally:
            connection.close()

    agent = threading.Thread(target=run)
    agent.start()
    try:
        message_put(broker="QMA", queue="RQ.QMB", messages=msgs("before"))
        wait_until(lambda: bodies(message_get(broker="QMB", queue="IN", batch=10)) == ["before"], "the first message")
        assert Channel.objects.get(name=name).lease_holder == "worker-1"
        worker_shutting_down.send(sender="worker-1@test", sig="SIGTERM", how="Warm", exitcode=0)
        agent.join(120)
        assert results.get("ended") == "shutdown"  # not "time": the run ended on the signal
    finally:
        AGENTS_STOP.clear()
        agent.join(120)
    assert channel_lease_acquire(name=name, holder="worker-2")  # taken over at once

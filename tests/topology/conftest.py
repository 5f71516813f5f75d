"""A platform with one object of every kind a definitions document holds."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from brokers.channels.definitions import channel_define
from brokers.services.access import grant_actions
from brokers.services.brokers import broker_define
from brokers.services.queues import queue_define
from pubsub.services.subscriptions import subscription_define
from pubsub.services.topics import topic_define
from workflows.services.definitions import workflow_define

TOKEN_ENV = "BATON_CHANNEL_TOKEN_QMA_TO_FAR"


@pytest.fixture
def platform(db, monkeypatch):
    """Two brokers; local, transmission, remote and alias queues; a channel to this platform
    and one to another (its token a secret); a topic object, a subscription, a workflow of two
    versions, a user and grants."""
    monkeypatch.setenv(TOKEN_ENV, "s3cret-token")
    broker_define(name="QMA", description="Orders", transaction_timeout_ms=60_000)
    broker_define(name="QMB", max_message_length=1024, default_persistence="non_persistent")
    queue_define(broker="QMA", name="ORDERS", max_depth=100, default_priority=4)
    queue_define(broker="QMA", name="QMB", usage="transmission")
    queue_define(broker="QMA", name="REMOTE.ORDERS", kind="remote", remote_broker="QMB", remote_queue="ORDERS")
    queue_define(broker="QMA", name="ALIAS.ORDERS", kind="alias", target_queue="ORDERS")
    queue_define(broker="QMB", name="ORDERS", read_order="commit")
    channel_define(name="QMA.TO.QMB", source_broker="QMA", transmission_queue="QMB", target_broker="QMB", window=4)
    channel_define(
        name="QMA.TO.FAR",
        source_broker="QMA",
        transmission_queue="QMB",
        target_broker="FAR",
        target_url="https://far.example",
        target_token="s3cret-token",
    )
    topic_define(broker="QMA", name="PRICES", topic_string="prices", conflation_interval_ms=100)
    subscription_define(broker="QMA", name="S1", topic_filter="prices/#", queue="ORDERS", durable=False)
    workflow_define(
        broker="QMA",
        name="claims",
        steps=[
            {"name": "a", "queue": "ORDERS", "compensation_queue": "ORDERS"},
            {"name": "b", "queue": "ORDERS", "compensation_queue": "ORDERS", "next": []},
        ],
        deadline_ms=5000,
    )
    from workflows.services.definitions import workflow_alter

    workflow_alter(broker="QMA", name="claims", description="second version")
    user = get_user_model()(username="alice")
    user.set_unusable_password()
    user.save()
    grant_actions(username="alice", broker="QMA", queue="ORDERS", actions=["put", "get"])
    grant_actions(username="alice", broker="QMB", actions=["browse"])

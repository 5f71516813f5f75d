from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from brokers.services.access import grant_actions
from brokers.services.brokers import broker_define
from brokers.services.queues import queue_define


@pytest.fixture
def two_brokers(db):
    for name in ("SEEN", "HIDDEN"):
        broker_define(name=name, transaction_timeout_ms=60_000)
        queue_define(broker=name, name="Q1")
        queue_define(broker=name, name="Q2")


def make_user(username: str, *, superuser: bool = False):
    User = get_user_model()
    user = User(username=username, is_superuser=superuser, is_staff=superuser)
    user.set_password("pw-for-tests-123")
    user.save()
    return user


@pytest.fixture
def admin_client(client, db):
    client.force_login(make_user("root", superuser=True))
    return client


@pytest.fixture
def viewer_client(client, two_brokers):
    make_user("viewer")
    grant_actions(username="viewer", broker="SEEN", actions=["browse"])
    grant_actions(username="viewer", broker="HIDDEN", queue="Q2", actions=["put"])  # put alone does not show it
    client.login(username="viewer", password="pw-for-tests-123")
    return client

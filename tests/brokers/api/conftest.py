"""Fixtures for the API product tests: users holding given grants, each with its own client."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from rest_framework.test import APIClient

from brokers.services.access import api_token_issue, grant_actions
from brokers.services.brokers import broker_define
from brokers.services.queues import queue_define


@pytest.fixture
def as_user(db) -> Callable[..., APIClient]:
    """``as_user("alice", ("QM1", "Q1", "put,get"), ("QM2", "", "admin"))``: a client
    authenticated as that (non-superuser) user, who holds those grants."""

    def make(username: str, *grants: tuple[str, str, str]) -> APIClient:
        token = api_token_issue(username=username, create_user=True)
        for broker, queue, actions in grants:
            grant_actions(username=username, broker=broker, queue=queue, actions=actions)
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
        return client

    return make


@pytest.fixture
def two_brokers(db):
    """QM1 with queues Q1 and Q2, QM2 with Q1 (each broker also has its dead-letter queue)."""
    broker_define(name="QM1", transaction_timeout_ms=60_000)
    broker_define(name="QM2", transaction_timeout_ms=60_000)
    for broker, queue in (("QM1", "Q1"), ("QM1", "Q2"), ("QM2", "Q1")):
        queue_define(broker=broker, name=queue)

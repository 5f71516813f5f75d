"""Shared fixtures. Database tests use a SQLite file (WAL, IMMEDIATE) like the platform;
the PostgreSQL suite sets DATABASE_URL to a server it starts itself."""
from __future__ import annotations

import os

import pytest
from rest_framework.test import APIClient

from brokers.services.access import api_token_issue
from brokers.services.brokers import broker_define
from brokers.services.message_input import MessageInput
from brokers.services.queues import queue_define

# Every reply of an operation is checked against its Output definition (here and in the
# servers the tests start, which inherit the environment).
os.environ.setdefault("BATON_API_CHECK_REPLIES", "1")


@pytest.fixture
def broker(db):
    return broker_define(name="QM1", transaction_timeout_ms=60_000)


@pytest.fixture
def queue(broker):
    return queue_define(broker="QM1", name="Q1")


@pytest.fixture
def api(db) -> APIClient:
    client = APIClient()
    token = api_token_issue(username="tester", create_user=True, superuser=True)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    return client


def database_url() -> str:
    """The test database as a DATABASE_URL, for subprocesses that must work on it."""
    from django.db import connection

    s = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{s['NAME']}"
    return f"postgres://{s['USER']}:{s.get('PASSWORD') or ''}@{s['HOST']}:{s['PORT']}/{s['NAME']}"


def msgs(*bodies: str, **fields) -> list[MessageInput]:
    return [MessageInput(body=b.encode(), **fields) for b in bodies]


def bodies(result) -> list[str]:
    return [bytes(m.body).decode() for m in result.messages]

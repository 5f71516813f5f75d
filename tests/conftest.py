"""Shared fixtures. Database tests use a SQLite file (WAL, IMMEDIATE) like the platform;
the PostgreSQL suite sets DATABASE_URL to a server it starts itself."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from brokers.services.access import api_token_issue
from brokers.services.brokers import broker_define
from brokers.services.message_input import MessageInput
from brokers.services.queues import queue_define

# Every reply of an operation is checked against its Output definition (here and in the
# servers the tests start, which inherit the environment).
os.environ.setdefault("BATON_API_CHECK_REPLIES", "1")


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup):
    """pytest-django's test database, and at the session's end this process's wake-up
    listeners stopped before it is dropped (a PostgreSQL listener is connected to it)."""
    yield
    from transactions.wakeup_bus import wakeup_buses_stop

    wakeup_buses_stop()


@pytest.fixture(scope="session", autouse=True)
def _quick_password_hashes():
    """Passwords set in this process are hashed with MD5 (those hashed otherwise still check):
    the platform's PBKDF2 costs about a second a hash on purpose, and the dashboard's tests
    set and check a password in most of them. The servers the tests start keep the
    platform's hashers."""
    from django.conf import settings
    from django.test import override_settings

    with override_settings(
        PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher", *settings.PASSWORD_HASHERS]
    ):
        yield


@pytest.fixture(scope="session")
def redis_server():
    """A real Redis server (Debian's redis-server) for the session, stopped at its end."""
    from tests.support.redisserver import redis_binary, redis_server as started
    from tests.support.errors import BenchmarkError

    try:
        redis_binary()
    except BenchmarkError as exc:
        pytest.skip(str(exc))
    with started() as server:
        yield server


@pytest.fixture(scope="session")
def user_venv(tmp_path_factory):
    """A virtual environment made from the wheels with ``pip install .[scaled]`` alone (no
    test extras), once per session, or once per run of platform/test when it names a
    directory for it in BATON_TEST_USER_VENV (its two passes share it):
    tests/packaging/user_venv.py."""
    from tests.packaging.user_venv import user_venv_build

    shared = os.environ.get("BATON_TEST_USER_VENV")
    return user_venv_build(Path(shared) if shared else tmp_path_factory.mktemp("user-venv"))


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


class Clock:
    """A wall clock the test moves by hand: ``timezone.now()`` everywhere in the process (the
    one way Baton reads the time of day) answers ``clock.now``, until the test ends."""

    def __init__(self, now) -> None:
        self.now = now

    def __call__(self):
        return self.now

    def advance(self, **delta) -> None:
        from datetime import timedelta

        self.now += timedelta(**delta)


@pytest.fixture
def clock(monkeypatch) -> Clock:
    from django.utils import timezone

    stopped = Clock(timezone.now())
    monkeypatch.setattr(timezone, "now", stopped)
    return stopped

"""The scaled-out form, really started: PostgreSQL (the server of the PostgreSQL pass,
DATABASE_URL), a Redis server started for the session (Celery's transport, the channel
layer and the wake-up bus), two Uvicorn web server processes and two Celery worker
processes, and beat. It runs in the PostgreSQL pass of platform/test; on SQLite its tests
are skipped (the embedded default has no scaled-out form)."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
import pytest
from django.db import connection

from tests.integration.servers import RUNNING, platform_started

#: Redis database numbers, one set per user of the session's Redis server.
REDIS_DB = {"platform": (1, 2), "suites": (3, 4), "up": (5, 6), "crash": (7, 8)}


def postgres_or_skip() -> dict:
    if connection.vendor != "postgresql":
        pytest.skip(
            "the scaled-out form runs on PostgreSQL: run with DATABASE_URL=postgres://... (platform/test's second pass)"
        )
    return connection.settings_dict


@contextmanager
def scratch_database(prefix: str) -> Iterator[str]:
    """A fresh database on the PostgreSQL server the tests run on; its URL. Dropped afterwards."""
    s = postgres_or_skip()
    name = f"{prefix}_{secrets.token_hex(4)}"
    server = {"host": s["HOST"], "port": s["PORT"], "user": s["USER"], "password": s.get("PASSWORD") or None}
    with psycopg.connect(dbname="postgres", autocommit=True, **server) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        password = f":{s['PASSWORD']}" if s.get("PASSWORD") else ""
        yield f"postgres://{s['USER']}{password}@{s['HOST']}:{s['PORT']}/{name}"
    finally:
        with psycopg.connect(dbname="postgres", autocommit=True, **server) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(autouse=True)
def _postgres_only():
    """Skip before any server starts."""
    postgres_or_skip()


def scaled_env(database_url: str, redis_server, use: str) -> dict[str, str]:
    celery_db, layer_db = REDIS_DB[use]
    return {
        "DATABASE_URL": database_url,
        "CELERY_BROKER_URL": redis_server.database(celery_db),
        "BATON_REDIS_URL": redis_server.database(layer_db),
    }


@pytest.fixture(scope="package")
def scaled(redis_server, tmp_path_factory):
    """Two web processes, two workers and beat on PostgreSQL and Redis, stopped when
    tests/scaled is done (package scope: idle, they would still run housekeeping for the
    rest of the suite)."""
    postgres_or_skip()
    with scratch_database("baton_scaled") as url:
        env = {**scaled_env(url, redis_server, "platform"), "BATON_CHANNEL_LEASE_S": "5"}
        with platform_started(tmp_path_factory.mktemp("baton-scaled"), extra_env=env, webs=2, workers=2) as running:
            yield running


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed and RUNNING:
        for running in RUNNING:
            report.sections.append((f"server logs ({running.var_dir})", running.logs()))

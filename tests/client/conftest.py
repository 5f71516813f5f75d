"""Fixtures for the client tests: one real platform (Uvicorn, Celery worker and beat, after
migrate and api_token, in a temporary directory) for the package's tests, started with the
integration suite's helper, and a :class:`baton_client.Client` talking to it over each
transport: a session (the default) and REST; every test that uses ``client`` runs on both."""

from __future__ import annotations

import itertools

import pytest

from baton_client import Client
from tests.integration.servers import RUNNING, platform_started

_names = itertools.count(1)


@pytest.fixture(scope="package")
def platform(tmp_path_factory):
    """Stopped when tests/client is done (package scope: an idle platform's worker and beat
    cost about a third of a core, which the rest of the suite would pay for)."""
    with platform_started(tmp_path_factory.mktemp("baton-client-var")) as running:
        yield running


@pytest.fixture(params=["session", "rest"])
def transport(request) -> str:
    return request.param


@pytest.fixture
def client(platform, transport):
    with Client(platform.url, platform.token, timeout=30, transport=transport) as c:
        yield c


@pytest.fixture
def other_client(platform, transport):
    """A second application, with its own session or connection pool."""
    with Client(platform.url, platform.token, timeout=30, transport=transport) as c:
        yield c


@pytest.fixture
def broker(client):
    """A fresh broker with queue Q1, so tests do not share state."""
    name = f"CL{next(_names)}"
    client.define_broker(name, transaction_timeout_ms=60_000)
    client.define_queue(name, "Q1")
    return name


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed and RUNNING:
        for running in RUNNING:
            report.sections.append((f"server logs ({running.var_dir})", running.logs()))

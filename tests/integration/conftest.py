"""Fixtures for the integration tests: one set of real servers (Uvicorn, Celery worker, Celery
beat) for the package's tests, against a fresh temporary directory. When a test fails, what the servers
wrote to stderr is attached to its report."""

from __future__ import annotations

import itertools

import pytest

from .servers import RUNNING, platform_started

_names = itertools.count(1)


@pytest.fixture(scope="package")
def platform(tmp_path_factory):
    """The live platform of tests/integration, stopped when the package's last test is done
    (package scope: an idle platform's worker and beat still run housekeeping several times
    a second, about a third of a core, which the rest of the suite would pay for)."""
    with platform_started(tmp_path_factory.mktemp("baton-var")) as running:
        yield running


@pytest.fixture
def http(platform):
    with platform.client() as client:
        yield client


@pytest.fixture
def live_broker(http):
    """A fresh broker with a queue Q1 on the live platform, so tests do not share state."""
    name = f"IT{next(_names)}"
    response = http.post("/api/brokers/", json={"name": name, "transaction_timeout_ms": 60_000})
    assert response.status_code == 201, response.text
    response = http.post(f"/api/brokers/{name}/queues/", json={"name": "Q1"})
    assert response.status_code == 201, response.text
    return name


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed and RUNNING:
        for running in RUNNING:
            report.sections.append((f"server logs ({running.var_dir})", running.logs()))

"""``/healthz`` and ``/readyz`` on a real web server (Uvicorn, the ASGI app): liveness whatever
the database does; readiness 503 naming what fails while the database is not migrated or
not answering (a PostgreSQL server stopped under it), 200 once it is; neither shows more
than its status."""

from __future__ import annotations

import os
import subprocess

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.pgserver import postgres_server

from .servers import Platform, manage, poll_until

pytestmark = [pytest.mark.integration, pytest.mark.once]  # once: each test picks its own database


def _web_only(var_dir, **extra_env) -> Platform:
    """A web server process alone (no worker, no beat, nothing migrated) against ``var_dir``."""
    platform = Platform(var_dir, extra_env=extra_env)
    platform.ports = [platform.port]
    platform.web_start(0)
    poll_until(
        lambda: httpx.get(f"{platform.url}/healthz", timeout=2).status_code == 200,
        timeout=60,
        what="GET /healthz to answer 200",
        diagnostics=platform.logs,
    )
    return platform


def test_readiness_follows_the_migrations_on_sqlite(tmp_path):
    platform = _web_only(tmp_path)
    try:
        assert httpx.get(f"{platform.url}/healthz").json() == {"status": "ok"}
        unmigrated = httpx.get(f"{platform.url}/readyz")
        assert unmigrated.status_code == 503
        assert unmigrated.json() == {"status": "unavailable", "failing": ["migrations"]}

        manage(platform.env, "migrate", "--noinput", "-v0")
        ready = httpx.get(f"{platform.url}/readyz")
        assert ready.status_code == 200, ready.text
        assert ready.json() == {"status": "ready"}
        # no authentication, no host check (a container's probe asks by address), no redirect
        probe = httpx.get(f"{platform.url}/readyz", headers={"Host": "not-an-allowed-host.example"})
        assert probe.status_code == 200 and probe.headers["content-type"] == "application/json"

        # /metrics on the same server: a token, the exposition as Prometheus's parser reads it
        assert httpx.get(f"{platform.url}/metrics").status_code == 401
        token = manage(platform.env, "api_token", "prometheus", "--create-user", "--superuser").strip().splitlines()[-1]
        scraped = httpx.get(f"{platform.url}/metrics", headers={"Authorization": f"Token {token}"})
        assert scraped.status_code == 200 and scraped.headers["content-type"].startswith("text/plain; version=")
        families = {f.name: f for f in text_string_to_metric_families(scraped.text)}
        assert {"baton_queue_depth", "baton_messages_put", "baton_units_of_work", "baton_sessions"} <= set(families)
    finally:
        platform.stop()


def test_readiness_turns_503_when_postgresql_stops(tmp_path):
    with postgres_server() as pg:
        platform = _web_only(tmp_path, DATABASE_URL=pg.url)
        try:
            # the server answers, nothing is migrated yet
            assert httpx.get(f"{platform.url}/readyz").json() == {"status": "unavailable", "failing": ["migrations"]}
            as_pg = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
            stopped = subprocess.run(
                [*as_pg, str(pg.bin_dir / "pg_ctl"), "-D", str(pg.directory / "data"), "-m", "fast", "-w", "stop"],
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert stopped.returncode == 0, stopped.stderr
            down = httpx.get(f"{platform.url}/readyz", timeout=30)
            assert down.status_code == 503
            assert down.json() == {"status": "unavailable", "failing": ["database"]}
            # the process itself still serves
            assert httpx.get(f"{platform.url}/healthz").json() == {"status": "ok"}
        finally:
            platform.stop()

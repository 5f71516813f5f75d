"""The soak and the crash test on the scaled-out form: two web servers and two workers on
PostgreSQL and Redis, the clients spread over both web servers. Short here (the PostgreSQL
pass); the long modes are ``python -m bench soak --scaled --minutes 30`` and
``BATON_CRASH_KILLS_SCALED=200`` (docs/testing.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import database_url
from tests.integration.test_crash import crash_run

from .conftest import scaled_env, scratch_database

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
KILLS = int(os.environ.get("BATON_CRASH_KILLS_SCALED") or 4)
#: Growth over the short soak that would mean a leak per operation (it runs hundreds).
FDS_MORE_AT_MOST, RSS_MIB_MORE_AT_MOST = 16, 32


def test_soak_on_the_scaled_out_form_loses_and_duplicates_nothing_and_stays_flat():
    env = {**os.environ, "DATABASE_URL": database_url()}  # the server: the soak makes a database of its own there
    result = subprocess.run(
        [sys.executable, "-m", "bench", "soak", "--scaled", "--seconds", "8", "--interval", "1", "--json"],
        check=False,
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    report = json.loads(result.stdout)
    assert report["facts"]["scaled"] and "2 web servers, 2 workers" in report["facts"]["database"]
    assert [p["process"] for p in report["processes"]] == ["web", "web2", "worker", "worker2", "beat", "load"]
    assert report["operations"] > 0 and not report["process_exits"]
    checker = report["checker"]
    assert checker["ok"] and checker["lost"] == 0 and checker["duplicated"] == 0, checker
    for process in report["processes"]:
        assert process["samples"] >= 2, process
        # the load generator is the harness, not the platform (the soak does not judge it):
        # its actors' sessions open as each actor starts, some after its first sample on a
        # busy machine (16 descriptors then 33 once, beside the other pass)
        if process["process"] != "load":
            assert process["fds_last"] - process["fds_first"] <= FDS_MORE_AT_MOST, process
        assert process["rss_mib_last"] - process["rss_mib_first"] <= RSS_MIB_MORE_AT_MOST, process


def test_crash_on_the_scaled_out_form(tmp_path, redis_server):
    with scratch_database("baton_crash") as url:
        crash_run(tmp_path, url, kills=KILLS, env=scaled_env(url, redis_server, "crash"), webs=2, workers=2)

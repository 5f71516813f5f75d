"""`python manage.py soak` end to end for a few seconds: it starts its own platform, runs
the mixed load, samples every process and reports. Only the shape of the report and the
checker's verdict are checked: never a figure."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent

pytestmark = pytest.mark.integration


@pytest.fixture(autouse=True)
def _once_per_suite(settings):
    """The command always works on a scratch SQLite file: the PostgreSQL pass would repeat it."""
    if not settings.DATABASES["default"]["ENGINE"].endswith("sqlite3"):
        pytest.skip("manage.py soak runs on a scratch SQLite database whatever the suite's database")


def test_soak_runs_briefly_and_reports_every_process_as_json():
    result = subprocess.run(
        [sys.executable, "manage.py", "soak", "--seconds", "4", "--interval", "1", "--json"],
        check=False,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    report = json.loads(result.stdout)
    assert [p["process"] for p in report["processes"]] == ["web", "worker", "beat", "load"]
    for process in report["processes"]:
        assert process["samples"] >= 2, process
        assert process["rss_mib_last"] > 0 and process["fds_last"] > 0
        assert process["verdict"] in (("not judged",) if process["process"] == "load" else ("growth", "no growth"))
    assert report["operations"] > 0
    assert report["checker"]["ok"] and report["checker"]["lost"] == 0 and report["checker"]["duplicated"] == 0

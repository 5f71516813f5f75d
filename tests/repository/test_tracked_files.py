"""No runtime file is tracked: what the platform writes when it runs (``var/``, the Celery
filesystem transport's ``control/``, databases, logs, schedules, pid files) stays out of git."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.once

ROOT = Path(__file__).resolve().parents[2]

RUNTIME = re.compile(
    r"""(^|/)(var|control|staticfiles|spark-warehouse|metastore_db|node_modules|__pycache__|\.venv)/
      | \.(sqlite3?|db|db-journal|db-wal|db-shm|log|pid|pyc)$
      | (^|/)celerybeat-schedule[^/]*$
      | (^|/)(tasks\.exchange|derby\.log)$""",
    re.VERBOSE,
)


def _tracked() -> list[str]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    done = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
    return [name for name in done.stdout.decode().split("\0") if name]


def test_no_tracked_file_is_a_runtime_file():
    assert [name for name in _tracked() if RUNTIME.search(name)] == []


@pytest.mark.parametrize(
    "name",
    [
        "var/baton.sqlite3",
        "control/tasks.exchange",
        "x/worker.log",
        "var/celerybeat-schedule",
        "dashboard/static/dashboard/dist/x/__pycache__/a.pyc",
        "db.sqlite3",
    ],
)
def test_the_pattern_knows_the_runtime_files(name):
    assert RUNTIME.search(name)


@pytest.mark.parametrize(
    "name",
    [
        "brokers/models.py",
        "docs/screenshots/queue.png",
        "control.md",
        "config/settings/logging.py",
        "dashboard/frontend/package-lock.json",
    ],
)
def test_the_pattern_leaves_source_files(name):
    assert not RUNTIME.search(name)

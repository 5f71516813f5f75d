"""README's "Scaled out" section, run as written: its command's settings (the addresses of
the database and of Redis replaced by a throwaway database and the session's Redis
server) given to ./platform/up, which then serves with two web server processes, two
Celery workers and beat, and stops them all on SIGTERM. It runs from a virtual environment
made with ``pip install .[scaled]`` alone (BATON_VENV; tests/packaging/user_venv.py): what
the Redis transport needs must come from the scaled extra, not from the test extras."""

from __future__ import annotations

import re
import shlex

import pytest

from tests.integration.servers import ROOT
from tests.integration.test_platform_up import exercise_platform_up

from .conftest import REDIS_DB, scratch_database

pytestmark = [pytest.mark.integration, pytest.mark.scaled]


def readme_scaled_command() -> tuple[dict[str, str], str]:
    """The settings and the command of the README's scaled-out block."""
    text = (ROOT / "README.md").read_text()
    section = text.split("### Scaled out", 1)[1]
    block = re.search(r"\n\n((?:    .*\n)+)", section).group(1)
    words = shlex.split(block.replace("\\\n", " "))
    settings = dict(word.split("=", 1) for word in words[:-1])
    return settings, words[-1]


def test_the_readme_scaled_out_command_starts_the_scaled_out_form(redis_server, user_venv, tmp_path):
    settings, command = readme_scaled_command()
    assert command == "./platform/up"
    assert set(settings) >= {
        "DATABASE_URL",
        "CELERY_BROKER_URL",
        "BATON_REDIS_URL",
        "BATON_WEB_PROCESSES",
        "BATON_WORKER_PROCESSES",
    }, settings
    celery_db, layer_db = REDIS_DB["up"]
    with scratch_database("baton_up") as database_url:
        env = {
            **settings,
            "DATABASE_URL": database_url,
            "CELERY_BROKER_URL": redis_server.database(celery_db),
            "BATON_REDIS_URL": redis_server.database(layer_db),
        }
        webs, workers = int(settings["BATON_WEB_PROCESSES"]), int(settings["BATON_WORKER_PROCESSES"])

        def check_processes(commands: list[str]) -> None:
            spawned = [c for c in commands if "multiprocessing.spawn" in c and "spawn_main" in c]
            assert len(spawned) >= webs, f"{webs} web server processes wanted: {commands}"
            names = sorted(re.search(r"-n (\S+)", c).group(1) for c in commands if "celery" in c and " worker" in c)
            assert names == [f"worker{n}@%h" for n in range(1, workers + 1)], names

        exercise_platform_up(ROOT, tmp_path, venv=user_venv.root, extra_env=env, check_processes=check_processes)
    # the command it prints for an API token runs the interpreter it serves with (BATON_VENV's)
    assert f"{user_venv.python} manage.py api_token" in (tmp_path / "up.out").read_text()

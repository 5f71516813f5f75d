"""The embedded Celery transport (filesystem) writes only under var/: a worker and beat run
from an empty working directory until the worker has run a task that beat sent, and
afterwards nothing but var/ is there (kombu puts its exchange tables in ``./control/``
unless told otherwise)."""

from __future__ import annotations

import os
import subprocess

import pytest

from .servers import PYTHON, ROOT, Server, base_env, poll_until

pytestmark = [pytest.mark.integration, pytest.mark.once]  # once: SQLite in either pass


def test_worker_and_beat_write_nothing_outside_var(tmp_path):
    run_dir = tmp_path / "cwd"
    var_dir = run_dir / "var"
    run_dir.mkdir()
    env = {**base_env(var_dir), "PYTHONPATH": str(ROOT)}
    subprocess.run(
        [PYTHON, str(ROOT / "manage.py"), "migrate", "--noinput", "-v0"], cwd=run_dir, env=env, check=True, timeout=120
    )
    servers = []
    for name, args in (
        ("worker", ["worker", "--pool", "threads", "--concurrency", "1", "--loglevel", "INFO"]),
        ("beat", ["beat", "--loglevel", "INFO"]),
    ):
        out, err = tmp_path / f"{name}.out", tmp_path / f"{name}.err"
        proc = subprocess.Popen(
            [PYTHON, "-m", "celery", "-A", "config", *args],
            cwd=run_dir,
            env=env,
            stdout=out.open("wb"),
            stderr=err.open("wb"),
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        servers.append(Server(name, proc, out, err))
    try:
        poll_until(
            lambda: "brokers.tasks.housekeeping" in servers[0].logs() and "succeeded" in servers[0].logs(),
            timeout=90,
            what="the worker ran a housekeeping task sent by beat",
            diagnostics=lambda: "".join(s.logs() for s in servers),
        )
    finally:
        for server in servers:
            server.stop()
    written = sorted(str(p.relative_to(run_dir)) for p in run_dir.rglob("*"))
    outside = [p for p in written if p != "var" and not p.startswith(f"var{os.sep}")]
    assert outside == [], outside
    assert (var_dir / "celery" / "control" / "celery.pidbox.exchange").exists(), written

"""``manage.py baton backup`` while units of work commit on a real server, ``manage.py baton
restore`` into a fresh platform, restart recovery, and what the restored platform holds: every
unit of work whose commit was answered before the backup began, each whole (its two puts, on
two queues, both there or neither). Bad input: a backup path that cannot be written, a restore
onto a running platform: a clear error, nothing changed."""

from __future__ import annotations

import subprocess
import threading
import time

import pytest

from .servers import PYTHON, ROOT, Platform, manage, platform_started, poll_until

pytestmark = [pytest.mark.integration, pytest.mark.once]  # once: the servers use SQLite in either pass


def bodies(client, queue: str) -> list[str]:
    """Every committed message's body on ``queue`` of BK, browsed page by page."""
    found, cursor = [], None
    while True:
        params = {"limit": 100, **({"cursor": cursor} if cursor else {})}
        page = client.get(f"/api/brokers/BK/queues/{queue}/messages/", params=params)
        assert page.status_code == 200, page.text
        messages = page.json()["messages"]
        if not messages:
            return found
        found += [m["body"] for m in messages]
        cursor = page.json()["cursor"]


def failing(env: dict, *args: str) -> subprocess.CompletedProcess:
    done = subprocess.run([PYTHON, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0, done.stdout
    return done


def test_a_backup_mid_flow_restores_every_answered_commit_and_none_half(tmp_path):
    backup = tmp_path / "baton.backup"
    answered: list[tuple[int, str, float]] = []  # (n, unit of work, when its commit was answered)
    stop = threading.Event()
    errors: list[str] = []

    with platform_started(tmp_path / "source") as source:
        with source.client() as http:
            assert http.post("/api/brokers/", json={"name": "BK", "transaction_timeout_ms": 60_000}).status_code == 201
            for queue in ("QA", "QB"):
                assert http.post("/api/brokers/BK/queues/", json={"name": queue}).status_code == 201

        def commits() -> None:
            n = 0
            with source.client() as client:
                while not stop.is_set():
                    txn = client.post("/api/brokers/BK/transactions/", json={}).json()["id"]
                    for queue in ("QA", "QB"):
                        put = client.post(
                            f"/api/brokers/BK/queues/{queue}/messages/", json={"body": f"u{n}", "transaction": txn}
                        )
                        if put.status_code != 201:
                            errors.append(put.text)
                            return
                    committed = client.post(f"/api/transactions/{txn}/commit/", json={})
                    if committed.status_code != 200:
                        errors.append(committed.text)
                        return
                    answered.append((n, txn, time.monotonic()))
                    n += 1

        flow = threading.Thread(target=commits, daemon=True)
        flow.start()
        try:
            poll_until(lambda: len(answered) >= 20 or errors, timeout=60, what="20 commits", diagnostics=source.logs)
            began = time.monotonic()
            printed = manage(source.env, "baton", "backup", str(backup))
            assert "backed up the sqlite database" in printed and backup.stat().st_size > 0
            at_end = len(answered)
            poll_until(lambda: len(answered) >= at_end + 10 or errors, timeout=60, what="commits after the backup")
        finally:
            stop.set()
            flow.join(30)
        assert not errors, errors

        # bad input while it runs: a path that cannot be written; a restore onto it
        refused = failing(source.env, "baton", "backup", str(tmp_path / "no-such-dir" / "x.backup"))
        assert "is not a directory" in refused.stderr and "Nothing was written" in refused.stderr
        assert not (tmp_path / "no-such-dir").exists()
        with source.client() as http:
            depth = http.get("/api/brokers/BK/queues/QA/").json()["depth"]
            refused = failing(source.env, "baton", "restore", str(backup))
            assert "The platform is running" in refused.stderr and "nothing was changed" in refused.stderr
            assert http.get("/api/brokers/BK/queues/QA/").json()["depth"] == depth == len(answered)

    # a fresh platform: restore, restart recovery (as platform_prepare runs it), start
    fresh = Platform(tmp_path / "fresh", username="dash2")
    assert "restored" in manage(fresh.env, "baton", "restore", str(backup))
    manage(fresh.env, "brokers_recover")
    with platform_started(tmp_path / "fresh", username="dash2") as restored:
        with restored.client() as http:
            qa, qb = bodies(http, "QA"), bodies(http, "QB")
            before = {f"u{n}" for n, _, at in answered if at < began}
            assert before and before <= set(qa), sorted(before - set(qa))[:10]
            assert sorted(qa) == sorted(qb) and len(set(qa)) == len(qa)  # none half, none twice
            assert len(qa) < len(answered)  # the commits after the backup are not in it
            units = {f"u{n}": txn for n, txn, _ in answered}
            for body in qa:
                assert http.get(f"/api/transactions/{units[body]}/").json()["state"] == "committed"
            # nothing left open: what the backup caught in flight was rolled back at the restart
            assert http.get("/api/brokers/BK/queues/QA/").json()["uncommitted_puts"] == 0

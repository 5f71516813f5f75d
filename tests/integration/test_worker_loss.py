"""Worker loss on a real platform: a Celery worker node killed with SIGKILL stops
heartbeating; once its heartbeat is older than ``BATON_WORKER_LOST_S``, beat (evaluating
whenever it writes its own heartbeat) puts one ``worker_lost`` event on every broker's
SYSTEM.ADMIN.CHANNEL.EVENT, however many evaluations follow while it is away; the node
started again under the same name puts one ``worker_returned``."""

from __future__ import annotations

import json
import os
import signal

import pytest

from .servers import platform_started, poll_until

pytestmark = [pytest.mark.integration, pytest.mark.once]  # once: its servers use SQLite in either pass

ENV = {"BATON_DASHBOARD_HEARTBEAT_S": "1", "BATON_WORKER_LOST_S": "4"}


def test_a_killed_worker_is_one_loss_event_and_its_return_one_more(tmp_path):
    with platform_started(tmp_path, extra_env=ENV) as platform:
        with platform.client() as http:
            for broker in ("QMA", "QMB"):
                assert http.post("/api/brokers/", json={"name": broker}).status_code == 201
            events: dict[str, list[dict]] = {"QMA": [], "QMB": []}

            def read() -> dict[str, list[str]]:
                """Every event got so far, by broker (each read takes what arrived since)."""
                for broker, got in events.items():
                    response = http.post(
                        f"/api/brokers/{broker}/queues/SYSTEM.ADMIN.CHANNEL.EVENT/get/", json={"batch": 50}
                    )
                    if response.status_code == 200:
                        got.extend(json.loads(m["body"]) for m in response.json()["messages"])
                    else:
                        assert response.status_code == 404, response.text  # not defined yet: no event
                return {broker: [e["event"] for e in got] for broker, got in events.items()}

            [worker] = platform.named("worker")
            os.killpg(worker.proc.pid, signal.SIGKILL)
            worker.proc.wait(30)
            platform.servers.remove(worker)
            poll_until(
                lambda: read() == {"QMA": ["worker_lost"], "QMB": ["worker_lost"]},
                timeout=60,
                what="one worker_lost event on each broker's SYSTEM.ADMIN.CHANNEL.EVENT",
                interval=0.2,
                diagnostics=lambda: f"{events}\n{platform.logs()}",
            )
            lost = events["QMA"][0]
            assert lost["worker"].startswith("worker0@") and lost["worker_lost_s"] == 4
            assert lost["pid"] == worker.proc.pid and lost["broker"] == "QMA"

            platform.worker_start(0)  # the same node name again
            both = ["worker_lost", "worker_returned"]
            poll_until(
                lambda: read() == {"QMA": both, "QMB": both},
                timeout=60,
                what="one worker_returned event after the single worker_lost on each broker",
                interval=0.2,
                diagnostics=lambda: f"{events}\n{platform.logs()}",
            )
            assert events["QMB"][1]["worker"] == lost["worker"] and events["QMB"][1]["lost_at"]

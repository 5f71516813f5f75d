"""Process heartbeats: written by the worker's task, by beat when it sends and by a web
process's follower; shown to superusers on the overview."""

from __future__ import annotations

import os
import socket
from datetime import timedelta

import pytest
from django.utils import timezone

from dashboard import selectors
from dashboard.access import Visibility
from dashboard.models import ProcessBeat
from dashboard.services import heartbeats
from dashboard.tasks import heartbeat

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def unthrottled():
    heartbeats._last.clear()
    yield
    heartbeats._last.clear()


def test_a_heartbeat_is_one_row_per_process_updated_at_most_twice_an_interval(settings):
    settings.BATON_DASHBOARD_HEARTBEAT_S = 3600
    assert heartbeats.process_beat(kind="web") is True
    first = ProcessBeat.objects.get()
    assert (first.kind, first.name, first.pid) == ("web", f"{socket.gethostname()}:{os.getpid()}", os.getpid())
    assert heartbeats.process_beat(kind="web") is False  # within half an interval: not written again
    heartbeats._last.clear()
    assert heartbeats.process_beat(kind="web") is True
    assert ProcessBeat.objects.count() == 1 and ProcessBeat.objects.get().seen_at > first.seen_at


def test_the_worker_task_records_its_node_and_forgets_rows_silent_for_a_day():
    long_ago = timezone.now() - timedelta(days=2)
    ProcessBeat.objects.create(kind="worker", name="gone@old", host="old", pid=1, started_at=long_ago, seen_at=long_ago)
    heartbeat.apply()  # as a worker runs it: named after the node (here, eagerly, the host)
    [row] = ProcessBeat.objects.all()
    assert row.kind == "worker" and row.name.startswith(socket.gethostname()) and row.pid == os.getpid()


def test_the_overview_lists_processes_for_superusers_only(admin_client):
    heartbeats.process_beat(kind="beat")
    rows = selectors.process_rows()
    assert [r["kind"] for r in rows] == ["beat"] and rows[0]["interval_s"] > 0
    assert selectors.overview()["processes"] == rows
    seen = Visibility(everything=False, brokers=frozenset({"SEEN"}))
    assert selectors.overview_for(selectors.overview(), seen)["processes"] == []
    page = admin_client.get("/").content.decode()
    assert 'id="process-table"' in page and f'data-key="beat/{rows[0]["name"]}"' in page


def test_a_viewer_sees_no_process_table(viewer_client):
    heartbeats.process_beat(kind="beat")
    assert 'id="process-table"' not in viewer_client.get("/").content.decode()


def test_a_worker_stopping_cleanly_takes_its_row_away_and_is_not_lost(settings):
    from config.celery import _worker_stopped
    from dashboard.services.worker_loss import workers_lost_evaluate

    settings.BATON_WORKER_LOST_S = 30
    heartbeats.process_beat(kind="worker", name="w2@host")
    ProcessBeat.objects.update(seen_at=timezone.now() - timedelta(minutes=5))

    class Node:
        hostname = "w2@host"

    _worker_stopped(sender=Node())  # as celery's worker_shutdown signal calls it
    assert not ProcessBeat.objects.exists() and workers_lost_evaluate() == 0


def test_a_loss_window_not_longer_than_a_heartbeat_is_refused_at_start():
    import subprocess
    import sys
    from pathlib import Path

    env = {**os.environ, "BATON_DASHBOARD_HEARTBEAT_S": "10", "BATON_WORKER_LOST_S": "10"}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    done = subprocess.run(
        [sys.executable, "-c", "import config.settings"],
        cwd=Path(__file__).resolve().parents[2],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "BATON_WORKER_LOST_S (10) must be longer than BATON_DASHBOARD_HEARTBEAT_S (10)" in done.stderr

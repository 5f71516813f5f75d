"""The console's alerts: the open queue performance events on the overview and the broker
page, of the queues the viewer may see only, and lost worker nodes for superusers
(dashboard/alerts.py, _alerts.html); the same alerts pushed on the overview socket."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from brokers.operating.events import queue_events_evaluate
from brokers.services.access import grant_actions
from brokers.services.message_input import MessageInput
from brokers.services.messages.put import message_put
from brokers.services.queues import queue_alter
from dashboard.alerts import alerts_open
from dashboard.follower import _objects
from dashboard.models import ProcessBeat
from dashboard.services.worker_loss import workers_lost_evaluate

from .conftest import make_user
from .test_trust import first_frame

pytestmark = pytest.mark.django_db


def fill(broker: str, queue: str, n: int) -> None:
    message_put(broker=broker, queue=queue, messages=[MessageInput(body=b"x") for _ in range(n)])


@pytest.fixture
def alerting(two_brokers):
    """Q1 of both brokers over its depth threshold, SEEN's Q2 not served within 1 ms (evaluated a
    second on)."""
    for broker in ("SEEN", "HIDDEN"):
        queue_alter(broker=broker, name="Q1", max_depth=10, depth_high_pct=50)
        fill(broker, "Q1", 6)
    queue_alter(broker="SEEN", name="Q2", service_interval_ms=1)
    fill("SEEN", "Q2", 1)
    assert queue_events_evaluate(now=timezone.now() + timedelta(seconds=1)) == 3


def test_overview_and_broker_page_show_the_open_events(admin_client, alerting):
    html = admin_client.get("/").content.decode()
    assert 'data-c="alerts"' in html
    assert html.count('data-alert="queue_depth_high"') == 2
    assert html.count('data-alert="queue_service_interval_high"') == 1
    assert "depth 6 of 10, at or over 50%" in html
    broker = admin_client.get("/brokers/HIDDEN/").content.decode()
    assert broker.count('data-alert="') == 1 and 'data-queue="HIDDEN/Q1"' in broker


def test_a_viewer_sees_the_alerts_of_what_they_may_see_only(viewer_client, alerting):
    html = viewer_client.get("/").content.decode()
    assert 'data-queue="SEEN/Q1"' in html and 'data-queue="SEEN/Q2"' in html
    assert 'data-queue="HIDDEN/' not in html
    grant_actions(username="viewer", broker="HIDDEN", queue="Q2", actions=["browse"])  # Q2, not Q1
    assert 'data-queue="HIDDEN/' not in viewer_client.get("/").content.decode()
    broker = viewer_client.get("/brokers/HIDDEN/")
    assert broker.status_code == 200 and 'data-queue="HIDDEN/Q1"' not in broker.content.decode()


def test_no_alerts_no_section_and_alerts_close(admin_client, alerting):
    queue_alter(broker="SEEN", name="Q2", service_interval_ms=0)  # the threshold off: no more alert
    queue_events_evaluate()
    html = admin_client.get("/brokers/SEEN/").content.decode()
    assert 'data-queue="SEEN/Q2"' not in html and 'data-queue="SEEN/Q1"' in html
    for broker in ("SEEN", "HIDDEN"):
        queue_alter(broker=broker, name="Q1", depth_high_pct=0)
    queue_events_evaluate()
    html = admin_client.get("/").content.decode()  # the section is there, hidden: a push may fill it
    assert 'data-c="alerts" id="alerts" hidden' in html and "data-alert=" not in html


def test_a_lost_worker_is_an_alert_for_superusers_until_it_returns(admin_client, two_brokers, settings):
    settings.BATON_WORKER_LOST_S = 30
    long_ago = timezone.now() - timedelta(minutes=5)
    ProcessBeat.objects.create(kind="worker", name="w1@host", host="host", pid=7, started_at=long_ago, seen_at=long_ago)
    assert workers_lost_evaluate() == 2  # one event on each broker's SYSTEM.ADMIN.CHANNEL.EVENT
    for path in ("/", "/brokers/SEEN/"):
        assert 'data-alert="worker_lost" data-worker="w1@host"' in admin_client.get(path).content.decode()
    viewer = Client()
    make_user("viewer")
    grant_actions(username="viewer", broker="SEEN", actions=["browse"])
    viewer.login(username="viewer", password="pw-for-tests-123")
    assert 'data-worker="w1@host"' not in viewer.get("/").content.decode()
    ProcessBeat.objects.filter(name="w1@host").update(seen_at=timezone.now())  # it beats again
    assert workers_lost_evaluate() == 2
    assert "data-alert=" not in admin_client.get("/").content.decode()


@pytest.mark.django_db(transaction=True)
def test_the_overview_socket_carries_the_alerts_its_user_may_see(viewer_client, alerting):
    frame = first_frame(viewer_client, "/ws/overview/", "http://localhost")
    assert sorted((a["broker"], a["queue"], a["event"]) for a in frame["alerts"]) == [
        ("SEEN", "Q1", "queue_depth_high"),
        ("SEEN", "Q2", "queue_service_interval_high"),
    ]
    assert _objects()[-1] == alerts_open()  # a change of the alerts is a change the follower pushes

"""The console's alerts: the open queue performance events on the overview and the broker
page, of the queues the viewer may see only (dashboard/alerts.py, _alerts.html)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from brokers.operating.events import queue_events_evaluate
from brokers.services.access import grant_actions
from brokers.services.message_input import MessageInput
from brokers.services.messages.put import message_put
from brokers.services.queues import queue_alter

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
    assert 'data-c="alerts"' not in admin_client.get("/").content.decode()

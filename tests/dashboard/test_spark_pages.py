"""Dashboard: the ingest panel of a queue's page and the analytics page."""

from __future__ import annotations

import re

import pytest

from analytics.models import AnalyticsRun, BrokerAnalytics, RunState
from ingest.models import Ingest

pytestmark = pytest.mark.django_db


@pytest.fixture
def staged(tmp_path, settings):
    settings.BATON_STAGING_DIR = tmp_path
    (tmp_path / "orders.jsonl").write_text('{"id": 1}\n')
    return tmp_path


def test_a_queue_page_starts_an_ingest_and_lists_it_for_live_progress(admin_client, two_brokers, staged):
    response = admin_client.post(
        "/brokers/SEEN/queues/Q1/ingest/", {"source": "orders.jsonl", "format": "jsonl", "key_field": "id"}
    )
    assert response.status_code == 302
    ingest = Ingest.objects.get()
    assert (ingest.broker, ingest.queue, ingest.key_field, ingest.state) == ("SEEN", "Q1", "id", "queued")
    page = admin_client.get("/brokers/SEEN/queues/Q1/").content.decode()
    assert f'data-ingest-id="{ingest.pk}" data-state="queued"' in page
    assert 'id="ingest-form"' in page and "dist/ingests.js" in page


def test_a_source_outside_staging_is_refused_with_a_message(admin_client, two_brokers, staged):
    response = admin_client.post("/brokers/SEEN/queues/Q1/ingest/", {"source": "../../etc/passwd"}, follow=True)
    assert "Not started" in response.content.decode() and not Ingest.objects.exists()


def test_the_ingest_form_needs_put(viewer_client):
    assert 'id="ingest-form"' not in viewer_client.get("/brokers/SEEN/queues/Q1/").content.decode()
    assert viewer_client.post("/brokers/SEEN/queues/Q1/ingest/", {"source": "x"}).status_code == 403


def test_analytics_page_shows_the_brokers_a_user_sees(viewer_client):
    run = AnalyticsRun.objects.create(state=RunState.SUCCEEDED)
    for broker in ("SEEN", "HIDDEN"):
        BrokerAnalytics.objects.create(
            broker=broker,
            run=run,
            computed_at=run.created_at,
            results={
                "broker": {"committed": 7, "saved_ms": 12.5},
                "chains": [],
                "queues": [
                    {
                        "queue": "Q1",
                        "puts": 3,
                        "gets": 1,
                        "depth": 2,
                        "oldest_age_ms": 1500.0,
                        "dwell_p50_ms": 4.0,
                        "dwell_p95_ms": 9.0,
                        "dwell_p99_ms": 9.5,
                        "backout_rate": 0.0,
                        "dead_letters": 0,
                        "expired": 0,
                    }
                ],
                "throughput": [{"queue": "Q1", "minute": "2025-05-01T12:00:00Z", "puts": 3, "gets": 1, "depth": 2}],
            },
        )
    page = viewer_client.get("/analytics/").content.decode()
    assert 'data-broker="SEEN"' in page and 'data-broker="HIDDEN"' not in page
    assert "7 committed" in page and "12.5 ms" in page and "4.0 / 9.0 / 9.5" in page
    assert "Run now" not in page


def test_a_superuser_runs_the_analytics_from_the_page(admin_client):
    assert "No results yet" in admin_client.get("/analytics/").content.decode()
    assert admin_client.post("/analytics/run/").status_code == 302
    assert AnalyticsRun.objects.get().state == "queued"


def test_analytics_page_shows_workflow_figures(viewer_client):
    run = AnalyticsRun.objects.create(state=RunState.SUCCEEDED)
    BrokerAnalytics.objects.create(
        broker="SEEN",
        run=run,
        computed_at=run.created_at,
        results={
            "broker": {},
            "queues": [{"queue": "APP.BACKOUT", "puts": 0, "transfers": 0, "moved_in": 5, "gets": 5, "depth": 0}],
            "throughput": [],
            "chains": [],
            "workflow_hours": [
                {
                    "workflow": "claims",
                    "hour": "2025-05-01T12:00:00Z",
                    "started": 41,
                    "completed": 37,
                    "compensating": 3,
                    "compensated": 2,
                    "compensation_failed": 1,
                }
            ],
            "workflow_steps": [
                {
                    "workflow": "claims",
                    "step": "approve",
                    "committed": 37,
                    "backed_out": 4,
                    "duration_p50_ms": 250.0,
                    "duration_p95_ms": 900.0,
                    "duration_p99_ms": 1200.5,
                    "held": 12,
                    "held_p50_ms": 100.0,
                    "held_p99_ms": None,
                    "held_ms": 1500.0,
                }
            ],
            "compensations": [
                {
                    "workflow": "claims",
                    "step": "validate",
                    "requested": 4,
                    "resubmitted": 1,
                    "compensated": 2,
                    "failed": 1,
                    "compensation_p50_ms": 400.0,
                    "compensation_p99_ms": 800.0,
                }
            ],
        },
    )
    page = viewer_client.get("/analytics/").content.decode()
    names = ("workflow-hours", "workflow-steps", "compensations")
    hours, steps, compensations = (_cells(page, f'<table class="analytics-{name}">') for name in names)
    assert hours == ["claims", "2025-05-01T12:00:00Z", "41", "37", "3", "2", "1"]
    assert steps == ["claims", "approve", "37", "4", "250.0 / 900.0 / 1200.5", "12", "100.0 / —", "1500.0"]
    assert compensations == ["claims", "validate", "4", "1", "2", "1", "400.0 / 800.0"]
    # the backout queue's messages arrived by moves: 5 moved in, 5 got, none left
    assert _cells(page, '<table class="analytics-queues">')[1:5] == ["0", "0", "5", "5"]


def _cells(page: str, table: str) -> list[str]:
    """The text of the cells of a table's body."""
    body = page.split(table)[1].split("</table>")[0].split("<tbody>")[1]
    return [" ".join(re.sub(r"<[^>]+>", " ", c).split()) for c in re.findall(r"<td[^>]*>(.*?)</td>", body, re.S)]

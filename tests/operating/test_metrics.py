"""``/metrics``: the exposition read back with prometheus_client's own parser; the figures
are the database's (depth, uncommitted puts, oldest message, put and get totals that survive
the fold and retention, units of work); who may scrape (401, 403, ``monitor`` per broker);
and docs/monitoring.md's alert rules name metrics the endpoint serves."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path

import pytest
import yaml
from django.core.management import CommandError, call_command
from prometheus_client.parser import text_string_to_metric_families
from rest_framework.test import APIClient

from brokers.operating.traffic import traffic_fold
from brokers.services.access import api_token_issue, grant_actions
from brokers.services.brokers import broker_define
from brokers.services.queues import queue_define
from transactions.models import JournalEvent

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]


def scrape(client) -> dict[str, dict[tuple, float]]:
    """name -> {labels as sorted tuple: value}, read by prometheus_client's parser."""
    response = client.get("/metrics")
    assert response.status_code == 200, response.content[:300]
    assert response["Content-Type"].startswith("text/plain; version=")
    samples: dict[str, dict[tuple, float]] = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            samples.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return samples


def q(broker: str, queue: str) -> tuple:
    return (("broker", broker), ("queue", queue))


def put(api, broker, queue, n, **fields):
    for i in range(n):
        response = api.post(
            f"/api/brokers/{broker}/queues/{queue}/messages/", {"body": f"m{i}", **fields}, format="json"
        )
        assert response.status_code == 201, response.content


def test_the_figures_are_the_databases(api):
    broker_define(name="QM1")
    queue_define(broker="QM1", name="Q1")
    queue_define(broker="QM1", name="IDLE")
    queue_define(broker="QM1", name="HOT", max_depth=4, depth_high_pct=50)
    queue_define(broker="QM1", name="COOL", max_depth=4, depth_high_pct=75)
    put(api, "QM1", "HOT", 2)
    put(api, "QM1", "COOL", 2)
    put(api, "QM1", "Q1", 3)
    got = api.post("/api/brokers/QM1/queues/Q1/get/", {"batch": 1}, format="json")
    assert got.status_code == 200 and len(got.json()["messages"]) == 1
    txn = api.post("/api/brokers/QM1/transactions/", {}, format="json").json()["id"]
    put(api, "QM1", "Q1", 1, transaction=txn)

    samples = scrape(api)
    assert samples["baton_queue_depth"][q("QM1", "Q1")] == 2
    assert samples["baton_queue_depth"][q("QM1", "IDLE")] == 0
    assert samples["baton_queue_uncommitted_puts"][q("QM1", "Q1")] == 1
    assert samples["baton_messages_put_total"][q("QM1", "Q1")] == 4
    assert samples["baton_messages_got_total"][q("QM1", "Q1")] == 1
    assert 0 <= samples["baton_queue_oldest_message_age_seconds"][q("QM1", "Q1")] < 60
    assert samples["baton_queue_oldest_message_age_seconds"][q("QM1", "IDLE")] == 0
    # the depth against the queue's own depth_high_pct: series only where it is set
    assert samples["baton_queue_depth_high"] == {q("QM1", "HOT"): 1, q("QM1", "COOL"): 0}
    assert samples["baton_units_of_work"][(("broker", "QM1"), ("state", "active"))] == 1
    assert samples["baton_units_of_work"][(("broker", "QM1"), ("state", "commit_held"))] == 0
    assert samples["baton_stomp_connections"][()] == 0
    assert samples["baton_sessions"][()] == 0

    # the events folded into the totals (as housekeeping does once they are older than the
    # fold's margin), then removed from the journal: the counters stay where they were
    JournalEvent.objects.update(at=JournalEvent.objects.first().at - timedelta(hours=1))
    assert traffic_fold() > 0
    JournalEvent.objects.exclude(pk=JournalEvent.objects.order_by("-id").first().pk).delete()
    again = scrape(api)
    assert again["baton_messages_put_total"][q("QM1", "Q1")] == 4
    assert again["baton_messages_got_total"][q("QM1", "Q1")] == 1
    put(api, "QM1", "Q1", 2)  # and new events count on top of the folded totals
    assert scrape(api)["baton_messages_put_total"][q("QM1", "Q1")] == 6


def test_process_heartbeat_ages_for_the_platforms_scraper_only(api):
    """Each platform process's heartbeat age, so that a worker's loss alerts even while beat,
    which announces it as an event, is down too; a monitor of some brokers does not see them."""
    from django.utils import timezone

    from dashboard.models import ProcessBeat

    broker_define(name="QM1")
    now = timezone.now()
    for kind, name, age_s in (("worker", "worker1@host", 2), ("worker", "worker2@host", 95), ("beat", "host:7", 4)):
        seen = now - timedelta(seconds=age_s)
        ProcessBeat.objects.create(kind=kind, name=name, host="host", pid=7, started_at=seen, seen_at=seen)
    ages = scrape(api)["baton_process_heartbeat_age_seconds"]
    assert set(ages) == {
        (("kind", "worker"), ("name", "worker1@host")),
        (("kind", "worker"), ("name", "worker2@host")),
        (("kind", "beat"), ("name", "host:7")),
    }
    assert 95 <= ages[(("kind", "worker"), ("name", "worker2@host"))] < 95 + 30
    assert 2 <= ages[(("kind", "worker"), ("name", "worker1@host"))] < 2 + 30

    watcher = APIClient()
    watcher.credentials(HTTP_AUTHORIZATION=f"Token {api_token_issue(username='watcher', create_user=True)}")
    grant_actions(username="watcher", broker="QM1", actions="monitor")
    assert "baton_process_heartbeat_age_seconds" not in scrape(watcher)


def test_who_may_scrape(api):
    broker_define(name="QM1")
    broker_define(name="QM2")
    queue_define(broker="QM1", name="Q1")
    queue_define(broker="QM2", name="Q2")
    anonymous = APIClient()
    response = anonymous.get("/metrics")
    assert response.status_code == 401 and response.json()["code"] == "not_authenticated"
    anonymous.credentials(HTTP_AUTHORIZATION="Token not-a-token")
    assert anonymous.get("/metrics").status_code == 401

    user = APIClient()
    user.credentials(HTTP_AUTHORIZATION=f"Token {api_token_issue(username='watcher', create_user=True)}")
    grant_actions(username="watcher", broker="QM1", actions="put,get,browse,admin")
    refused = user.get("/metrics")
    assert refused.status_code == 403 and refused.json()["code"] == "permission_denied"
    assert "monitor" in refused.json()["message"]

    call_command("grant", "watcher", "--broker", "QM1", "--actions", "monitor")
    samples = scrape(user)  # the figures of the brokers granted, only
    assert {labels[0] for labels in samples["baton_queue_depth"]} == {("broker", "QM1")}
    assert q("QM1", "Q1") in samples["baton_queue_depth"]
    assert set(samples["baton_units_of_work"]) == {
        (("broker", "QM1"), ("state", "active")),
        (("broker", "QM1"), ("state", "commit_held")),
    }
    everything = scrape(api)["baton_queue_depth"]  # a superuser's: every broker
    assert {q("QM1", "Q1"), q("QM2", "Q2")} <= set(everything)
    # not a queue's to give, nor to display a queue with
    with pytest.raises(CommandError, match="whole broker"):
        call_command("grant", "watcher", "--broker", "QM2", "--queue", "Q2", "--actions", "monitor")
    call_command("revoke", "watcher", "--broker", "QM1", "--actions", "put,get,browse,admin")
    assert user.get("/api/brokers/QM1/queues/Q1/").status_code == 403
    assert user.get("/metrics").status_code == 200


#: What Prometheus 2 asks for: OpenMetrics first, the text format as well.
PROMETHEUS_ACCEPT = (
    "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
    "text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
)


def test_the_text_format_whatever_the_scraper_prefers(api):
    """Prometheus prefers OpenMetrics, which prometheus_client writes at twice the cost a
    series: the answer is the text format, which Prometheus takes too."""
    broker_define(name="QM1")
    queue_define(broker="QM1", name="Q1")
    response = api.get("/metrics", HTTP_ACCEPT=PROMETHEUS_ACCEPT)
    assert response.status_code == 200
    assert response["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
    families = {f.name: f for f in text_string_to_metric_families(response.content.decode())}
    assert families["baton_queue_depth"].samples[0].labels == {"broker": "QM1", "queue": "Q1"}
    assert "# EOF" not in response.content.decode()


def test_the_alert_rules_name_served_metrics(api):
    """docs/monitoring.md's rules (Debian's prometheus package, for promtool, is ~100 MB: the
    YAML is parsed and each expression's metric names checked against a scrape)."""
    broker_define(name="QM1")
    queue_define(broker="QM1", name="Q1")
    served = {family.name for family in text_string_to_metric_families(api.get("/metrics").content.decode())}
    served |= {f"{name}_total" for name in served}
    text = (ROOT / "docs" / "monitoring.md").read_text()
    blocks = re.findall(r"```yaml\n(.*?)```", text, re.S)
    rules = [yaml.safe_load(block) for block in blocks if "groups:" in block]
    assert len(rules) == 1, "one rules file in docs/monitoring.md"
    alerts = [rule for group in rules[0]["groups"] for rule in group["rules"]]
    assert {rule["alert"] for rule in alerts} >= {
        "BatonQueueDepthHigh",
        "BatonOldestMessageOld",
        "BatonChannelDown",
        "BatonWorkerSilent",
    }
    for rule in alerts:
        names = set(re.findall(r"\bbaton_[a-z_]+", rule["expr"]))
        assert names and names <= served, (rule["alert"], names - served)
        assert rule["labels"]["severity"] and rule["annotations"]["summary"]
    scrape_configs = [yaml.safe_load(block) for block in blocks if "scrape_configs:" in block]
    assert scrape_configs and scrape_configs[0]["scrape_configs"][0]["metrics_path"] == "/metrics"

"""/metrics in the scaled-out form: the figures are the platform's, read from the database,
so the two web processes scraped in turn report the same depth and totals."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

pytestmark = [pytest.mark.integration, pytest.mark.scaled]


def figures(client, broker: str) -> tuple[float, float, float]:
    """(depth, messages put, messages gotten) of the broker's queue Q1, as scraped."""
    response = client.get("/metrics")
    assert response.status_code == 200, response.text
    found = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            if sample.labels.get("broker") == broker and sample.labels.get("queue") == "Q1":
                found[sample.name] = sample.value
    return found["baton_queue_depth"], found["baton_messages_put_total"], found["baton_messages_got_total"]


def test_two_web_processes_report_the_same_figures(scaled):
    with scaled.client(0) as first, scaled.client(1) as second:
        assert first.post("/api/brokers/", json={"name": "SMETRICS"}).status_code == 201
        assert first.post("/api/brokers/SMETRICS/queues/", json={"name": "Q1"}).status_code == 201
        for client, n in ((first, 3), (second, 2)):
            for i in range(n):
                put = client.post("/api/brokers/SMETRICS/queues/Q1/messages/", json={"body": f"m{i}"})
                assert put.status_code == 201, put.text
        got = second.post("/api/brokers/SMETRICS/queues/Q1/get/", json={"batch": 1})
        assert got.status_code == 200 and len(got.json()["messages"]) == 1
        assert figures(first, "SMETRICS") == figures(second, "SMETRICS") == (4, 5, 1)

"""Screenshots of every page for docs/ (README links them), taken from pages with data: the
analytics page after a Spark run over a scene with pre-emptive links (Java needed). Skipped
unless BATON_SCREENSHOTS names the folder to write to:

    BATON_SCREENSHOTS=docs/screenshots .venv/bin/python -m pytest tests/dashboard/browser/test_screenshots.py
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.integration.servers import poll_until

from .test_moves import backout_queue_with
from .test_transaction_graph import begin, linked_pair

OUT = os.environ.get("BATON_SCREENSHOTS")
pytestmark = pytest.mark.skipif(not OUT, reason="set BATON_SCREENSHOTS to a folder to take the docs' screenshots")


def scene(api, broker: str) -> str:
    """Queues with messages in every state, linked units of work, a channel."""
    api.post(f"/api/brokers/{broker}/queues/", json={"name": "ORDERS", "description": "orders from the web shop"})
    for i in range(6):
        api.post(
            f"/api/brokers/{broker}/queues/ORDERS/messages/",
            json={"body": f'{{"order": {i}, "item": "widget"}}', "properties": {"region": "eu"}},
        )
    held = begin(api, broker)
    api.post(f"/api/brokers/{broker}/queues/ORDERS/messages/", json={"body": "not committed yet", "transaction": held})
    api.post(f"/api/brokers/{broker}/queues/ORDERS/get/", json={"transaction": begin(api, broker)})
    for _ in range(3):
        producer, consumer = linked_pair(api, broker)
        api.post(f"/api/transactions/{consumer}/commit/", json={"wait": 0})
    p2, c2 = linked_pair(api, broker)
    third = begin(api, broker)
    api.post(f"/api/brokers/{broker}/queues/Q2/messages/", json={"body": "next stage", "transaction": c2})
    api.post(f"/api/brokers/{broker}/queues/Q2/get/", json={"transaction": third, "preemptive": True})
    p3, c3 = linked_pair(api, broker)
    api.post(f"/api/transactions/{p3}/rollback/", json={})
    p4, c4 = linked_pair(api, broker)
    api.post(f"/api/transactions/{c4}/commit/", json={"wait": 0})
    api.post(f"/api/transactions/{p4}/commit/", json={})
    fan = begin(api, broker)  # one producer, two pre-emptive consumers: laid out by dagre
    api.post(
        f"/api/brokers/{broker}/queues/Q1/messages/",
        json={"messages": [{"body": "a"}, {"body": "b"}], "transaction": fan},
    )
    for _ in range(2):
        api.post(f"/api/brokers/{broker}/queues/Q1/get/", json={"transaction": begin(api, broker), "preemptive": True})
    for _ in range(4):
        begin(api, broker)
    api.post(f"/api/brokers/{broker}/queues/", json={"name": "TO.FAR", "usage": "transmission"})
    api.post(
        "/api/channels/",
        json={
            "name": f"{broker}.TO.FAR",
            "source_broker": broker,
            "transmission_queue": "TO.FAR",
            "target_broker": "FAR",
            "target_url": "http://127.0.0.1:9",
            "target_token": "x",
        },
    )
    api.post(f"/api/brokers/{broker}/queues/TO.FAR/messages/", json={"body": "x"})
    api.post(f"/api/channels/{broker}.TO.FAR/start/")
    return producer


def local_channel(api, broker: str) -> str:
    """A running channel to a second broker of this platform, fed through a remote queue OUT."""
    target = f"{broker}.EU"
    api.post("/api/brokers/", json={"name": target})
    api.post(f"/api/brokers/{target}/queues/", json={"name": "IN"})
    api.post(f"/api/brokers/{broker}/queues/", json={"name": "XMIT.EU", "usage": "transmission"})
    api.post(
        f"/api/brokers/{broker}/queues/",
        json={
            "name": "OUT",
            "kind": "remote",
            "remote_broker": target,
            "remote_queue": "IN",
            "transmission_queue": "XMIT.EU",
        },
    )
    name = f"{broker}.TO.EU"
    api.post(
        "/api/channels/",
        json={
            "name": name,
            "source_broker": broker,
            "transmission_queue": "XMIT.EU",
            "target_broker": target,
            "batch_size": 10,
        },
    )
    assert api.post(f"/api/channels/{name}/start/").status_code in (200, 202)
    return name


def pipeline(api, broker: str, *, pairs: int = 20, plain: int = 30) -> None:
    """Pre-emptive producer/consumer pairs that all commit (the consumer's commit held until
    its producer's), and plain messages put and gotten outside any unit of work."""
    for _ in range(pairs):
        producer, consumer = linked_pair(api, broker)
        assert api.post(f"/api/transactions/{consumer}/commit/", json={"wait": 0}).status_code == 202
        assert api.post(f"/api/transactions/{producer}/commit/", json={}).status_code == 200
    api.post(f"/api/brokers/{broker}/queues/", json={"name": "INVOICES"})
    api.post(
        f"/api/brokers/{broker}/queues/INVOICES/messages/",
        json={"messages": [{"body": f"invoice {i}"} for i in range(plain)]},
    )
    for _ in range(plain * 2 // 3):
        assert api.post(f"/api/brokers/{broker}/queues/INVOICES/get/", json={}).json()["messages"]


def analytics_run(api) -> None:
    """Run the Spark analytics now and wait for its results."""
    run = api.post("/api/analytics/runs/", json={})
    assert run.status_code == 202, run.text

    def finished():
        state = api.get(f"/api/analytics/runs/{run.json()['id']}/").json()
        assert state["state"] != "failed", state
        return state["state"] == "succeeded"

    poll_until(finished, timeout=600, what="the analytics run to succeed", interval=1)


def test_screenshots(admin_page, site, api, fresh_broker):
    out = Path(OUT)
    out.mkdir(parents=True, exist_ok=True)
    page = admin_page
    selected = scene(api, fresh_broker)
    pipeline(api, fresh_broker)
    page.goto(f"{site.url}/")
    expect(page.locator("#live-status")).to_have_attribute("data-live", "true")
    with page.expect_response(lambda r: r.url.endswith("/rates/?window=60")):
        page.select_option("#window", label="1 minute")  # the scene's seconds spread out
    page.screenshot(path=out / "overview.png", full_page=True)
    page.goto(f"{site.url}/brokers/{fresh_broker}/")
    page.screenshot(path=out / "broker.png", full_page=True)
    page.goto(f"{site.url}/brokers/{fresh_broker}/queues/ORDERS/")
    page.screenshot(path=out / "queue.png", full_page=True)
    page.locator("#message-table tbody tr a").first.click()
    page.screenshot(path=out / "message.png", full_page=True)
    page.goto(f"{site.url}/brokers/{fresh_broker}/transactions/#{selected}")
    expect(page.locator("#graph-root")).to_have_attribute("data-ready", "true")
    page.screenshot(path=out / "transactions.png", full_page=True)
    page.click("#theme-toggle")
    page.screenshot(path=out / "transactions-dark.png", full_page=True)
    page.click("#theme-toggle")
    channel = local_channel(api, fresh_broker)
    page.goto(f"{site.url}/channels/")
    expect(page.locator("#live-status")).to_have_attribute("data-live", "true")
    sent = 0
    for burst in (6, 14, 9):  # messages sent while the page is open: its chart's samples
        api.post(f"/api/brokers/{fresh_broker}/queues/OUT/messages/", json={"messages": [{"body": "over"}] * burst})
        sent += burst
        expect(page.locator(f'tr[data-channel="{channel}"] [data-field="messages_sent"]')).to_have_text(str(sent))
    expect(page.locator("#sent-chart")).to_have_attribute("data-empty", "false")
    page.screenshot(path=out / "channels.png", full_page=True)
    ids = backout_queue_with(api, fresh_broker, 5)
    taken = begin(api, fresh_broker)  # one of them in flight: the job skips it, saying why
    api.post(f"/api/brokers/{fresh_broker}/queues/APP.BACKOUT/get/", json={"transaction": taken, "msg_id": ids[2]})
    page.goto(f"{site.url}/brokers/{fresh_broker}/queues/APP.BACKOUT/")
    page.check("#select-page")
    page.screenshot(path=out / "backout-queue.png", full_page=True)
    page.click("#move-submit")
    expect(page.locator("#job")).to_have_attribute("data-state", "succeeded")
    page.screenshot(path=out / "move-job.png", full_page=True)
    analytics_run(api)
    page.goto(f"{site.url}/analytics/")
    expect(page.locator(f'[data-chart="{fresh_broker}"]')).to_have_attribute("data-empty", "false")
    page.screenshot(path=out / "analytics.png", full_page=True)
    page.context.clear_cookies()
    page.goto(f"{site.url}/login/")
    page.screenshot(path=out / "login.png")

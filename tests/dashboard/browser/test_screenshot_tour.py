"""Every page of the console, full-page, in light and dark mode at desktop and phone width:
what a person looks at before calling the console done (docs/dashboard.md, "Screenshots").
Skipped unless BATON_SCREENSHOT_TOUR names the folder to write to:

    BATON_SCREENSHOT_TOUR=/tmp/tour .venv/bin/python -m pytest tests/dashboard/browser/test_screenshot_tour.py

BATON_SCREENSHOT_ONLY=transactions,queue takes only the pages named. Each page is also checked: it answers, logs no console error and is no wider than the
window at phone width except inside its scrolling tables."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from playwright.sync_api import expect

from .conftest import ARGS, CHROMIUM, sign_in  # noqa: F401
from .test_connections import stomp_client_opened
from .test_moves import backout_queue_with
from .test_screenshots import local_channel, scene

OUT = os.environ.get("BATON_SCREENSHOT_TOUR")
#: Comma-separated page names (below) to take only those: BATON_SCREENSHOT_ONLY=transactions,queue
ONLY = {name for name in os.environ.get("BATON_SCREENSHOT_ONLY", "").split(",") if name}
pytestmark = pytest.mark.skipif(not OUT, reason="set BATON_SCREENSHOT_TOUR to a folder to take the tour")

SIZES = {"desktop": {"width": 1400, "height": 900}, "phone": {"width": 390, "height": 844}}


def pages(api, broker: str) -> dict[str, str]:
    """Name -> path of every page, with data to show."""
    scene(api, broker)
    local_channel(api, broker)
    api.post(f"/api/brokers/{broker}/queues/OUT/messages/", json={"messages": [{"body": "over"}] * 5})
    backout_queue_with(api, broker, 3)
    api.post(f"/api/brokers/{broker}/topics/", json={"name": "PRICES", "topic_string": "prices/eu"})
    api.post(f"/api/brokers/{broker}/subscriptions/", json={"name": "S1", "topic_filter": "prices/#", "queue": "Q1"})
    api.post(
        f"/api/brokers/{broker}/workflows/",
        json={"name": "claim", "steps": [{"name": "pay", "queue": "Q1", "compensation_queue": "Q2"}]},
    )
    instance = api.post(f"/api/brokers/{broker}/workflows/claim/instances/", json={"body": "1"}).json()["id"]
    api.post(f"/api/brokers/{broker}/connections/", json={"client_name": "billing-app"})  # a session
    msg = api.get(f"/api/brokers/{broker}/queues/ORDERS/messages/").json()["messages"][0]["msg_id"]
    b, q = f"/brokers/{broker}", f"/brokers/{broker}/queues"
    return {
        "overview": "/",
        "broker": f"{b}/",
        "queue": f"{q}/ORDERS/",
        "queue-remote": f"{q}/OUT/",
        "queue-backout": f"{q}/APP.BACKOUT/",
        "queue-dead-letter": f"{q}/SYSTEM.DEAD.LETTER.QUEUE/",
        "message": f"{q}/ORDERS/messages/{msg}/",
        "purge": f"{q}/ORDERS/purge/",
        "queue-alter": f"{q}/ORDERS/alter/",
        "queue-delete": f"{q}/ORDERS/delete/",
        "broker-define": "/define/broker/",
        "broker-alter": f"{b}/alter/",
        "channel-define": "/define/channel/",
        "transactions": f"{b}/transactions/",
        "topics": f"{b}/topics/",
        "topic-define": f"{b}/define/topic/",
        "subscriptions": f"{b}/subscriptions/",
        "workflows": f"{b}/workflows/",
        "workflow-define": f"{b}/define/workflow/",
        "workflow-instance": f"/workflow-instances/{instance}/",
        "channels": "/channels/",
        "analytics": "/analytics/",
        "users": "/users/",
        "error": "/brokers/NO.SUCH.BROKER/",
    }


def test_every_page_in_both_themes_at_both_widths(chromium, site, api, fresh_broker):
    out = Path(OUT)
    out.mkdir(parents=True, exist_ok=True)
    tour = {name: path for name, path in pages(api, fresh_broker).items() if not ONLY or name in ONLY}
    wide: list[str] = []
    client = stomp_client_opened(chromium, site, fresh_broker, "ORDERS")  # on the broker and queue pages
    for scheme in ("light", "dark"):
        for size, viewport in SIZES.items():
            context = chromium.new_context(viewport=viewport, color_scheme=scheme)
            page = context.new_page()
            page.set_default_timeout(20_000)
            try:
                page.goto(f"{site.url}/login/")
                page.screenshot(path=out / f"login-{scheme}-{size}.png", full_page=True)
                sign_in(page, site, site.username, site.password)
                for name, path in tour.items():
                    answer = page.goto(f"{site.url}{path}")
                    assert answer.status == (404 if name == "error" else 200), (name, answer.status)
                    if page.locator("#live-status").count():
                        expect(page.locator("#live-status")).to_have_attribute("data-live", "true")
                    if name == "transactions":
                        expect(page.locator("#graph-root")).to_have_attribute("data-ready", "true")
                        page.locator('#transaction-table tr[data-state="active"]').first.click()
                        page.click("#rollback-ask")  # the detail panel: owner, age, the rollback asked
                    page.screenshot(path=out / f"{name}-{scheme}-{size}.png", full_page=True)
                    width = page.evaluate("document.documentElement.scrollWidth")
                    if width > viewport["width"] + 1:
                        wide.append(f"{name} {scheme} {size}: {width}px")
            finally:
                context.close()
    client.close()
    print("\n".join(["pages wider than the window:", *wide]) if wide else "no page wider than the window")

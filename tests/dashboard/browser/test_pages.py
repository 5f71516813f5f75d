"""Every page in a real browser: it renders, its scripts run without console errors, the
live badge turns live; a viewer sees only what it may; a foreign Origin is refused."""

from __future__ import annotations

import asyncio
import re
from concurrent.futures import ThreadPoolExecutor

import pytest
from playwright.sync_api import expect
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from .conftest import sign_in


def test_every_page_renders_without_console_errors(admin_page, site, api, fresh_broker):
    put = api.post(f"/api/brokers/{fresh_broker}/queues/Q1/messages/", json={"body": '{"order": 1}'})
    msg_id = put.json()["msg_id"] if "msg_id" in put.json() else put.json()["messages"][0]["msg_id"]
    page = admin_page
    b = f"/brokers/{fresh_broker}"
    live_pages = ["/", f"{b}/transactions/", "/channels/", f"{b}/queues/Q1/", f"{b}/workflows/", f"{b}/"]
    static_pages = [
        f"{b}/queues/Q1/messages/{msg_id}/",
        f"{b}/queues/Q1/alter/",
        f"{b}/queues/Q1/delete/",
        f"{b}/define/queue/",
        f"{b}/topics/",
        f"{b}/subscriptions/",
        "/define/broker/",
        "/define/channel/",
        "/users/",
        "/analytics/",
    ]
    for path in live_pages + static_pages:
        response = page.goto(f"{site.url}{path}")
        assert response.status == 200, path
        expect(page.locator("h1")).to_be_visible()
        if path in live_pages:
            expect(page.locator("#live-status")).to_have_attribute("data-live", "true")
    expect(page.locator("h1")).to_have_text("Analytics")
    assert page.console.errors == []


def test_overview_counts_follow_a_put(admin_page, site, api, fresh_broker):
    admin_page.goto(f"{site.url}/")
    cell = admin_page.locator(f'section[data-broker="{fresh_broker}"] tr[data-queue="Q1"] [data-field="available"]')
    expect(cell).to_have_text("0")
    expect(admin_page.locator("#live-status")).to_have_attribute("data-live", "true")
    assert api.post(f"/api/brokers/{fresh_broker}/queues/Q1/messages/", json={"body": "x"}).status_code == 201
    expect(cell).to_have_text("1")
    assert admin_page.console.errors == []


def test_message_body_views_and_put_from_the_queue_page(admin_page, site, fresh_broker):
    page = admin_page
    page.goto(f"{site.url}/brokers/{fresh_broker}/queues/Q1/")
    page.fill("textarea[name=body]", '{"hello": "world"}')
    page.click("text=Put (outside any unit of work)")
    expect(page.locator(".flash.success")).to_contain_text("Put message")
    page.locator("#message-table tbody tr a").first.click()
    expect(page.locator("#body-json")).to_contain_text('"hello": "world"')
    page.get_by_role("tab", name="Hex").click()
    expect(page.locator("#body-hex")).to_be_visible()
    expect(page.locator("#body-hex")).to_contain_text("7b 22 68 65")
    page.get_by_role("tab", name="Hex").press("ArrowRight")
    expect(page.locator("#body-base64")).to_be_visible()
    assert page.console.errors == []


def test_viewer_sees_only_the_brokers_it_may_browse(browser_page, site, fresh_broker, api, viewer_of):
    other = f"{fresh_broker}X"
    assert api.post("/api/brokers/", json={"name": other}).status_code == 201
    username, password = viewer_of(fresh_broker)
    sign_in(browser_page, site, username, password)
    expect(browser_page.locator(f'section[data-broker="{fresh_broker}"]')).to_be_visible()
    expect(browser_page.locator(f'section[data-broker="{other}"]')).to_have_count(0)
    assert browser_page.goto(f"{site.url}/brokers/{other}/").status == 403
    assert browser_page.goto(f"{site.url}/brokers/{other}/transactions/").status == 403
    browser_page.goto(f"{site.url}/brokers/{fresh_broker}/queues/Q1/")
    expect(browser_page.locator("text=Put a message")).to_have_count(0)
    expect(browser_page.locator("text=Purge available messages…")).to_have_count(0)
    browser_page.goto(f"{site.url}/channels/")
    expect(browser_page.get_by_role("button", name="Start")).to_have_count(0)


def test_websocket_from_a_foreign_origin_is_refused(admin_page, site):
    cookie = {c["name"]: c["value"] for c in admin_page.context.cookies()}["sessionid"]

    async def attempt(origin: str) -> dict:
        headers = {"Cookie": f"sessionid={cookie}", "Origin": origin}
        async with connect(f"{site.ws_url}/ws/overview/", additional_headers=headers, open_timeout=15) as ws:
            return await asyncio.wait_for(ws.recv(), 15)

    def run(origin: str) -> dict:  # in its own thread: Playwright's event loop runs in this one
        with ThreadPoolExecutor(1) as pool:
            return pool.submit(asyncio.run, attempt(origin)).result()

    with pytest.raises(InvalidStatus) as refused:
        run("http://evil.example")
    assert refused.value.response.status_code == 403
    assert '"overview"' in run(site.url)


def test_stale_badge_when_the_socket_drops_then_it_reconnects(admin_page, site, api, fresh_broker):
    """The page's WebSocket goes through Playwright's route (to the real server); closing it
    from the test is a dropped connection as the page sees it."""
    sockets = []

    def relay(route) -> None:
        route.connect_to_server()
        sockets.append(route)

    page = admin_page
    page.route_web_socket(re.compile(r".*/ws/overview/$"), relay)
    page.goto(f"{site.url}/")
    badge = page.locator("#live-status")
    expect(badge).to_have_attribute("data-live", "true")
    # The socket the page follows now is the newest one: on a loaded machine an earlier one may
    # already have closed (and the page reconnected) before the badge said "live".
    opened = len(sockets)
    sockets[-1].close()
    expect(badge).to_contain_text("stale")
    expect(badge).to_have_attribute("data-live", "true")  # reconnected
    assert len(sockets) > opened
    cell = page.locator(f'section[data-broker="{fresh_broker}"] tr[data-queue="Q1"] [data-field="available"]')
    assert api.post(f"/api/brokers/{fresh_broker}/queues/Q1/messages/", json={"body": "x"}).status_code == 201
    expect(cell).to_have_text("1")  # and is live again


def test_the_overview_shows_the_worker_beat_and_web_alive(admin_page, site):
    """The platform's own worker and beat write heartbeats (the worker's through the task
    beat sends); the page's web process writes its own while the overview's socket is open."""
    page = admin_page
    page.clock.install()  # the page's clock, to be moved on below; it runs on meanwhile
    page.goto(f"{site.url}/")
    for kind in ("worker", "beat", "web"):
        badge = page.locator(f'#process-summary [data-kind="{kind}"]')
        expect(badge).to_have_attribute("data-alive", "true", timeout=40_000)
        expect(badge).to_contain_text("last heartbeat")
    row = page.locator('#process-table tr[data-kind="worker"]').first
    page.clock.fast_forward("05:00")  # five minutes on for the page: every heartbeat it has is old
    expect(row.locator('[data-field="status"]')).to_contain_text("silent for")
    assert page.console.errors == []

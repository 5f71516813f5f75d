"""The console's alerts in a real browser on a real platform: a queue over its depth threshold,
evaluated by ``manage.py baton housekeep``, shows as an alert on the overview and its broker's
page, under the console's Content-Security-Policy with no violation, readable in both themes
(its text colour differs from its background's)."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.integration.servers import manage

from .test_csp import LISTEN, _violations


def test_an_open_queue_event_is_an_alert(admin_page, site, api, fresh_broker):
    page = admin_page
    page.add_init_script(LISTEN)
    altered = api.patch(f"/api/brokers/{fresh_broker}/queues/Q1/", json={"max_depth": 10, "depth_high_pct": 10})
    assert altered.status_code == 200, altered.text
    assert api.post(f"/api/brokers/{fresh_broker}/queues/Q1/messages/", json={"body": "x"}).status_code == 201
    manage(site.env, "baton", "housekeep")  # a pass now (beat's may have come first: once per crossing)
    for path in ("/", f"/brokers/{fresh_broker}/"):
        page.goto(f"{site.url}{path}")
        alert = page.locator(f'[data-alert="queue_depth_high"][data-queue="{fresh_broker}/Q1"]')
        expect(alert).to_contain_text("depth 1 of 10, at or over 10%")
        expect(alert.locator("a")).to_have_attribute("href", f"/brokers/{fresh_broker}/queues/Q1/")
        for theme in ("light", "dark"):
            page.evaluate(f"document.documentElement.dataset.theme = '{theme}'")
            colours = alert.evaluate("(e) => [getComputedStyle(e).color, getComputedStyle(e).backgroundColor]")
            assert colours[0] != colours[1] and "0, 0, 0, 0" not in colours[1], (theme, colours)
        page.wait_for_load_state("networkidle")
        assert _violations(page) == [], path


def test_an_alert_appears_and_goes_without_a_reload(admin_page, site, api, fresh_broker):
    """The overview and the broker's page open first; the queue then crosses its depth
    threshold and beat's operating pass (every 5 s) evaluates it: the alert is pushed on the
    page's socket (no reload: a mark set on the page's window is still there), and goes the
    same way once the queue is emptied."""
    pages = [admin_page, admin_page.context.new_page()]
    for page, path in zip(pages, ("/", f"/brokers/{fresh_broker}/")):
        page.goto(f"{site.url}{path}")
        expect(page.locator("#live-status")).to_have_attribute("data-live", "true")
        page.evaluate("() => { window.notReloaded = true; }")
        expect(page.locator(f'[data-queue="{fresh_broker}/Q2"]')).to_have_count(0)
    altered = api.patch(f"/api/brokers/{fresh_broker}/queues/Q2/", json={"max_depth": 10, "depth_high_pct": 10})
    assert altered.status_code == 200, altered.text
    assert api.post(f"/api/brokers/{fresh_broker}/queues/Q2/messages/", json={"body": "x"}).status_code == 201
    for page in pages:
        alert = page.locator(f'[data-alert="queue_depth_high"][data-queue="{fresh_broker}/Q2"]')
        expect(alert).to_contain_text("depth 1 of 10, at or over 10%", timeout=30_000)
        expect(alert.locator("a")).to_have_attribute("href", f"/brokers/{fresh_broker}/queues/Q2/")
        assert page.evaluate("() => window.notReloaded") is True
    assert api.post(f"/api/brokers/{fresh_broker}/queues/Q2/get/", json={"batch": 1}).status_code == 200
    for page in pages:
        expect(page.locator(f'[data-queue="{fresh_broker}/Q2"]')).to_have_count(0, timeout=30_000)
        assert page.evaluate("() => window.notReloaded") is True
    assert admin_page.console.errors == []

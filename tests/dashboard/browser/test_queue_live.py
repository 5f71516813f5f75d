"""The queue page in Chromium: its counts follow puts made through the API without a
reload; messages put together show ids that differ."""

from __future__ import annotations

import re

from playwright.sync_api import expect


def test_depth_follows_puts_without_reload(admin_page, site, api, fresh_broker):
    page = admin_page
    page.goto(f"{site.url}/brokers/{fresh_broker}/queues/Q1/")
    page.evaluate("window.notReloaded = true")
    expect(page.locator("#live-status")).to_have_attribute("data-live", "true")
    depth = page.locator('[data-field="depth"]')
    expect(depth).to_have_text("0")
    expect(page.locator("#list-behind")).to_be_hidden()
    for body in ("a", "b", "c"):
        assert api.post(f"/api/brokers/{fresh_broker}/queues/Q1/messages/", json={"body": body}).status_code == 201
    expect(depth).to_have_text("3")
    expect(page.locator('#queue-counts [data-field="available"]')).to_have_text("3")
    expect(page.locator("#list-behind")).to_be_visible()
    assert api.post(f"/api/brokers/{fresh_broker}/queues/Q1/get/", json={"syncpoint": "no"}).status_code == 200
    expect(depth).to_have_text("2")  # a get, too
    assert page.evaluate("window.notReloaded") is True
    assert page.console.errors == []


def test_messages_put_together_show_distinct_ids(admin_page, site, api, fresh_broker):
    batch = {"messages": [{"body": f"m{i}"} for i in range(25)]}
    answer = api.post(f"/api/brokers/{fresh_broker}/queues/Q2/messages/", json=batch)
    assert answer.status_code == 201
    page = admin_page
    page.goto(f"{site.url}/brokers/{fresh_broker}/queues/Q2/")
    rows = page.locator("#message-table tbody tr[data-msg-id]")
    expect(rows).to_have_count(25)
    ids = rows.evaluate_all("rs => rs.map(r => r.dataset.msgId)")
    shown = page.locator("#message-table tbody tr[data-msg-id] td a.mono").all_inner_texts()
    assert all(len(i) == 48 for i in ids) and len(set(ids)) == 25
    assert len(set(ids)) == len(set(shown)) == 25
    assert [s.replace(" ", "").replace("\n", "") for s in shown] == ids  # the whole id, its parts set apart
    assert page.console.errors == []


SUM = "(series) => series.slice(1).map((ys) => ys.reduce((a, b) => a + (b || 0), 0))"


def test_rates_and_depth_charts_from_history_then_live(admin_page, site, api, fresh_broker):
    """Puts made before the page opened come from the history (the put and get totals /metrics
    reports, sampled, then read once more as the page asks); later ones from the pushes."""
    assert api.post(f"/api/brokers/{fresh_broker}/queues/Q1/messages/", json={"messages": [{"body": "x"}] * 4})
    page = admin_page
    page.goto(f"{site.url}/brokers/{fresh_broker}/queues/Q1/")
    expect(page.locator("#live-status")).to_have_attribute("data-live", "true")
    page.wait_for_function(f"() => ({SUM})(window.batonQueue.rates())[0] * 10 >= 4 - 1e-9")  # 4 puts in 10 s buckets
    expect(page.locator("#queue-rate-now")).to_contain_text("puts/s")
    assert api.post(f"/api/brokers/{fresh_broker}/queues/Q1/get/", json={"syncpoint": "no"}).status_code == 200
    page.wait_for_function(f"() => ({SUM})(window.batonQueue.rates())[1] > 0")  # the get, live
    page.wait_for_function("() => window.batonQueue.depth()[1].at(-1) === 3")  # available now: 3
    page.select_option("#queue-window", "3600")
    page.wait_for_function(f"() => ({SUM})(window.batonQueue.rates())[0] * 60 >= 4 - 1e-9")  # minute buckets
    assert page.console.errors == []


def test_a_filtered_queue_list_keeps_its_rows_and_their_counts_live(admin_page, site, api, fresh_broker):
    page = admin_page
    page.goto(f"{site.url}/brokers/{fresh_broker}/")
    page.fill('#queue-list input[name="name"]', "Q1")
    page.click("#queue-list button[type=submit]")
    expect(page).to_have_url(re.compile(r"\?name=Q1"))
    rows = page.locator("#queue-table tbody tr[data-queue]")
    expect(rows).to_have_count(1)
    expect(page.locator("#live-status")).to_have_attribute("data-live", "true")
    assert api.post(f"/api/brokers/{fresh_broker}/queues/", json={"name": "Q1.NEW"}).status_code == 201
    assert api.post(f"/api/brokers/{fresh_broker}/queues/Q1/messages/", json={"body": "a"}).status_code == 201
    # the queue is defined before the put: the push that brings the count knows Q1.NEW, and
    # a filtered list does not add it
    expect(page.locator('#queue-table tr[data-queue="Q1"] [data-field="available"]')).to_have_text("1")
    expect(rows).to_have_count(1)
    assert page.console.errors == []

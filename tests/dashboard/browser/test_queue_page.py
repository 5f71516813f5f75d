"""The overview's charts and the queue page in a real browser: rate history for every
window, the message browser paging both ways without changing any message, its preview
column and server-side filter, the body's views and its download, purge with the count
shown first."""

from __future__ import annotations

import base64

from playwright.sync_api import expect

from tests.integration.servers import manage

from .test_transaction_graph import begin, row

RATE_PUTS = "() => window.batonOverview.rates()[1].reduce((sum, v) => sum + (v || 0), 0)"


def test_rate_chart_shows_history_for_every_window(admin_page, site, api, fresh_broker):
    assert (
        api.post(f"/api/brokers/{fresh_broker}/queues/Q1/messages/", json={"messages": [{"body": "r"}] * 3}).status_code
        == 201
    )
    manage(site.env, "shell", "-c", "from dashboard.services.depth import depth_sample_take; depth_sample_take()")
    page = admin_page
    page.goto(f"{site.url}/")
    expect(page.locator("#live-status")).to_have_attribute("data-live", "true")
    for window, label in (("60", "1 minute"), ("600", "10 minutes"), ("3600", "1 hour"), ("86400", "24 hours")):
        with page.expect_response(lambda r, w=window: r.url.endswith(f"/rates/?window={w}") and r.status == 200):
            page.select_option("#window", label=label)
        assert page.evaluate("window.batonOverview.windowS()") == int(window)
        # puts per second summed over the buckets: 3 puts, whatever the bucket (1 s or 60 s)
        bucket = 1 if int(window) <= 600 else 60
        page.wait_for_function(f"() => Math.round(({RATE_PUTS})() * {bucket}) >= 3")
    # depth: the sample taken before the page opened (as beat takes them), then live points
    assert page.evaluate("window.batonOverview.depth()[0][0]") < page.evaluate("performance.timeOrigin / 1000")
    assert page.evaluate("Math.max(...window.batonOverview.depth()[1])") >= 3
    assert page.console.errors == []


def test_message_browser_pages_both_ways_and_changes_nothing(admin_page, site, api, fresh_broker):
    bodies = [f"message {i:02}" for i in range(30)]
    assert (
        api.post(
            f"/api/brokers/{fresh_broker}/queues/Q1/messages/", json={"messages": [{"body": b} for b in bodies]}
        ).status_code
        == 201
    )
    before = api.get(f"/api/brokers/{fresh_broker}/queues/Q1/").json()
    page = admin_page
    page.goto(f"{site.url}/brokers/{fresh_broker}/queues/Q1/")
    rows = page.locator("#message-table tbody tr")
    expect(rows).to_have_count(25)
    first_page = rows.evaluate_all("rs => rs.map(r => r.dataset.msgId)")
    expect(page.locator("a[rel=prev]")).to_have_count(0)
    page.click("a[rel=next]")
    expect(rows).to_have_count(5)
    expect(page.locator("a[rel=next]")).to_have_count(0)
    page.click("a[rel=prev]")
    expect(rows).to_have_count(25)
    assert rows.evaluate_all("rs => rs.map(r => r.dataset.msgId)") == first_page
    page.click("text=First")
    assert rows.evaluate_all("rs => rs.map(r => r.dataset.msgId)") == first_page
    after = api.get(f"/api/brokers/{fresh_broker}/queues/Q1/").json()
    assert {k: after[k] for k in ("depth", "in_flight", "locked")} == {
        k: before[k] for k in ("depth", "in_flight", "locked")
    }
    browsed = api.get(f"/api/brokers/{fresh_broker}/queues/Q1/messages/?limit=30").json()["messages"]
    assert all(m["delivery_count"] == 0 for m in browsed)
    assert page.console.errors == []


def test_body_views_and_download(admin_page, site, api, fresh_broker):
    body = bytes([0, 1, 2, 250, 255]) + b"binary"
    put = api.post(
        f"/api/brokers/{fresh_broker}/queues/Q1/messages/", json={"body_base64": base64.b64encode(body).decode()}
    )
    msg_id = put.json()["msg_id"] if "msg_id" in put.json() else put.json()["messages"][0]["msg_id"]
    page = admin_page
    page.goto(f"{site.url}/brokers/{fresh_broker}/queues/Q1/messages/{msg_id}/")
    expect(page.locator("#body-hex")).to_be_visible()  # not UTF-8: hex first, no text or JSON tab
    expect(page.get_by_role("tab", name="Text")).to_have_count(0)
    expect(page.locator("#body-hex")).to_contain_text("00 01 02 fa ff 62")
    page.get_by_role("tab", name="Base64").click()
    expect(page.locator("#body-base64")).to_have_text(base64.b64encode(body).decode())
    with page.expect_download() as download:
        page.click("text=download")
    assert download.value.suggested_filename == f"{msg_id}.bin"
    with open(download.value.path(), "rb") as f:
        assert f.read() == body
    assert page.console.errors == []


def test_purge_shows_the_count_first_and_leaves_units_of_work_alone(admin_page, site, api, fresh_broker):
    assert (
        api.post(f"/api/brokers/{fresh_broker}/queues/Q1/messages/", json={"messages": [{"body": "p"}] * 4}).status_code
        == 201
    )
    txn = begin(api, fresh_broker)
    assert (
        api.post(
            f"/api/brokers/{fresh_broker}/queues/Q1/messages/", json={"body": "uncommitted", "transaction": txn}
        ).status_code
        == 201
    )
    page = admin_page
    page.goto(f"{site.url}/brokers/{fresh_broker}/queues/Q1/")
    page.click("text=Purge available messages…")
    expect(page.locator("#purge-count")).to_have_text("4")
    assert api.get(f"/api/brokers/{fresh_broker}/queues/Q1/").json()["depth"] == 4  # nothing removed yet
    page.click("text=Remove 4 messages")
    expect(page.locator(".flash.success")).to_have_text("Purged 4 messages.")
    counts = api.get(f"/api/brokers/{fresh_broker}/queues/Q1/").json()
    assert (counts["depth"], counts["uncommitted_puts"]) == (0, 1)
    api.post(f"/api/transactions/{txn}/rollback/", json={})
    assert page.console.errors == []


def test_a_message_links_to_the_unit_of_work_holding_it_on_the_graph(admin_page, site, api, fresh_broker):
    txn = begin(api, fresh_broker)
    assert api.post(f"/api/brokers/{fresh_broker}/queues/Q1/messages/", json={"body": "held"}).status_code == 201
    assert api.post(f"/api/brokers/{fresh_broker}/queues/Q1/get/", json={"transaction": txn}).json()["messages"]
    page = admin_page
    page.goto(f"{site.url}/brokers/{fresh_broker}/queues/Q1/")
    expect(page.locator("#message-table tbody tr").first).to_have_attribute("data-state", "in_flight")
    page.locator("#message-table tbody tr").first.get_by_role("link", name=txn[:6]).click()
    expect(page.locator("#graph-root")).to_have_attribute("data-ready", "true")
    expect(page.locator('#detail [data-f="id"]')).to_have_text(txn)
    expect(row(page, txn)).to_have_class("selected")
    api.post(f"/api/transactions/{txn}/rollback/", json={})
    assert page.console.errors == []


def test_message_browser_previews_and_filters_server_side(admin_page, site, api, fresh_broker):
    url = f"/api/brokers/{fresh_broker}/queues/Q1/messages/"
    assert (
        api.post(
            url,
            json={
                "messages": [
                    {"body": '{"order": 1, "state": "failed"}', "properties": {"reason": "timeout"}},
                    {"body_base64": base64.b64encode(b"\xff\x00 raw").decode()},
                    *[{"body": f"note {i}", "properties": {"reason": "parse"}} for i in range(27)],
                ]
            },
        ).status_code
        == 201
    )
    before = api.get(f"/api/brokers/{fresh_broker}/queues/Q1/").json()
    page = admin_page
    page.goto(f"{site.url}/brokers/{fresh_broker}/queues/Q1/")
    previews = page.locator("#message-table tbody td.preview")
    expect(previews.nth(0)).to_have_attribute("data-kind", "json")
    expect(previews.nth(0).locator("code")).to_have_text('{"order":1,"state":"failed"}')
    expect(previews.nth(1)).to_have_attribute("data-kind", "hex")
    expect(previews.nth(1).locator("code")).to_have_text("ff 00 20 72 61 77")
    # by body: the server answers one page of matches
    page.fill("input[name=body_contains]", "failed")
    page.click("#message-filter button[type=submit]")
    rows = page.locator("#message-table tbody tr")
    expect(rows).to_have_count(1)
    expect(page.locator("input[name=body_contains]")).to_have_value("failed")
    # by property, paged: 27 matches, 25 a page, the next page keeps the filter
    page.fill("input[name=body_contains]", "")
    page.fill("input[name=property]", "reason=parse")
    page.click("#message-filter button[type=submit]")
    expect(rows).to_have_count(25)
    page.click("a[rel=next]")
    expect(rows).to_have_count(2)
    expect(previews).to_have_text(["text note 25", "text note 26"])
    # a malformed filter says why
    page.fill("input[name=property]", "no good")
    page.click("#message-filter button[type=submit]")
    expect(page.locator("#filter-error")).to_contain_text("A property filter is name or name=value")
    page.click("#filter-clear")
    expect(rows).to_have_count(25)
    after = api.get(f"/api/brokers/{fresh_broker}/queues/Q1/").json()
    assert {k: after[k] for k in ("depth", "in_flight", "locked")} == {
        k: before[k] for k in ("depth", "in_flight", "locked")
    }
    # the one error: Chromium logs the malformed filter's page, answered 400 as it should be
    assert page.console.errors == [
        "console error: Failed to load resource: the server responded with a status of 400 (Bad Request)"
    ]

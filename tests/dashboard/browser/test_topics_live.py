"""The topics page in Chromium follows topic objects and retained publications live."""

from __future__ import annotations

from playwright.sync_api import expect


def test_topic_objects_and_retained_publications_appear_and_go_live(admin_page, site, api, fresh_broker):
    page = admin_page
    page.goto(f"{site.url}/brokers/{fresh_broker}/topics/")
    expect(page.locator("#live-status")).to_have_attribute("data-live", "true")
    base = f"/api/brokers/{fresh_broker}"
    assert api.post(f"{base}/topics/", json={"name": "PRICES", "topic_string": "prices/eu"}).status_code == 201
    row = page.locator('#topic-table tr[data-topic="PRICES"]')
    expect(row.locator('[data-field="topic_string"]')).to_have_text("prices/eu")
    expect(row.locator('a[data-c="alter"]')).to_have_attribute("href", f"/brokers/{fresh_broker}/topics/PRICES/alter/")
    answer = api.post(f"{base}/publish/", json={"topic": "prices/eu", "body": "42", "retain": True})
    assert answer.status_code in (200, 201), answer.text
    retained = page.locator('#retained-table tr[data-topic="prices/eu"]')
    expect(retained.locator('[data-field="body"]')).to_have_text("42")
    expect(retained.locator('[data-field="size"]')).to_have_text("2 B")
    assert api.delete(f"{base}/topics/PRICES/").status_code in (200, 204)
    expect(row).to_have_count(0)
    expect(page.locator("#topic-table tr.none")).to_be_visible()
    assert page.console.errors == []

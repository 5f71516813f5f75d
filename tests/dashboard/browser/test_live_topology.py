"""Brokers and queues defined and deleted through REST appear on and go from the overview
and broker pages while they stay open (pushed over /ws/overview/, no reload)."""

from __future__ import annotations

from playwright.sync_api import expect


def test_overview_and_broker_page_follow_definitions(admin_page, site, api, fresh_broker):
    page = admin_page
    page.goto(f"{site.url}/")
    page.evaluate("window.notReloaded = true")
    expect(page.locator("#live-status")).to_have_attribute("data-live", "true")
    section = page.locator(f'section[data-broker="{fresh_broker}"]')
    assert (
        api.post(f"/api/brokers/{fresh_broker}/queues/", json={"name": "NEW/ONE", "usage": "transmission"}).status_code
        == 201
    )
    row = section.locator('tr[data-queue="NEW/ONE"]')
    expect(row).to_be_visible()
    expect(row.locator("td").nth(1)).to_have_text("local (xmit)")
    expect(row.get_by_role("link", name="NEW/ONE")).to_have_attribute(
        "href", f"/brokers/{fresh_broker}/queues/NEW/ONE/"
    )
    names = section.locator("tr[data-queue]").evaluate_all("rs => rs.map(r => r.dataset.queue)")
    assert names == sorted(names) and "NEW/ONE" in names
    assert api.post(f"/api/brokers/{fresh_broker}/queues/NEW/ONE/messages/", json={"body": "x"}).status_code == 201
    expect(row.locator('[data-field="available"]')).to_have_text("1")  # a new row's counts follow too

    other = f"{fresh_broker}N"
    assert api.post("/api/brokers/", json={"name": other}).status_code == 201
    expect(page.locator(f'section[data-broker="{other}"] h2 a').first).to_have_attribute("href", f"/brokers/{other}/")
    assert api.delete(f"/api/brokers/{other}/").status_code == 204
    expect(page.locator(f'section[data-broker="{other}"]')).to_have_count(0)
    assert api.delete(f"/api/brokers/{fresh_broker}/queues/NEW/ONE/?purge=true").status_code == 204
    expect(row).to_have_count(0)
    assert page.evaluate("window.notReloaded") is True

    page.goto(f"{site.url}/brokers/{fresh_broker}/")
    expect(page.locator("#live-status")).to_have_attribute("data-live", "true")
    assert api.post(f"/api/brokers/{fresh_broker}/queues/", json={"name": "LATER"}).status_code == 201
    row = page.locator('#queue-table tr[data-queue="LATER"]')
    expect(row.locator('[data-field="put_get"]')).to_have_text("enabled / enabled")
    assert api.patch(f"/api/brokers/{fresh_broker}/queues/LATER/", json={"put_enabled": False}).status_code == 200
    expect(row.locator('[data-field="put_get"]')).to_have_text("inhibited / enabled")
    assert api.delete(f"/api/brokers/{fresh_broker}/queues/LATER/").status_code == 204
    expect(row).to_have_count(0)
    assert page.console.errors == []

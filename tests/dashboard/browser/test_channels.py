"""The channels page in a real browser: a superuser starts and stops a channel and the
table and drawing follow its state and counters live (a viewer has no such buttons:
test_pages.py)."""

from __future__ import annotations

from playwright.sync_api import expect


def test_start_a_channel_see_it_send_and_stop_it(admin_page, site, api, fresh_broker):
    target = f"{fresh_broker}T"
    assert api.post("/api/brokers/", json={"name": target}).status_code == 201
    assert api.post(f"/api/brokers/{target}/queues/", json={"name": "IN"}).status_code == 201
    assert (
        api.post(f"/api/brokers/{fresh_broker}/queues/", json={"name": "XMIT", "usage": "transmission"}).status_code
        == 201
    )
    assert (
        api.post(
            f"/api/brokers/{fresh_broker}/queues/",
            json={
                "name": "OUT",
                "kind": "remote",
                "remote_broker": target,
                "remote_queue": "IN",
                "transmission_queue": "XMIT",
            },
        ).status_code
        == 201
    )
    name = f"{fresh_broker}.TO.{target}"
    assert (
        api.post(
            "/api/channels/",
            json={
                "name": name,
                "source_broker": fresh_broker,
                "transmission_queue": "XMIT",
                "target_broker": target,
                "batch_size": 10,
            },
        ).status_code
        == 201
    )
    page = admin_page
    page.goto(f"{site.url}/channels/")
    row = page.locator(f'tr[data-channel="{name}"]')
    expect(row.locator('[data-field="state"]')).to_have_text("stopped")
    expect(row).to_contain_text("10 messages or 200 ms")  # the batch; the window is its own column
    expect(page.locator("#live-status")).to_have_attribute("data-live", "true")
    assert (
        api.post(
            f"/api/brokers/{fresh_broker}/queues/OUT/messages/", json={"messages": [{"body": "over"}] * 3}
        ).status_code
        == 201
    )
    expect(row.locator('[data-field="backlog"]')).to_have_text("3")  # waiting on XMIT, live
    page.wait_for_function(f"() => window.batonChannels.edgeLabel({name!r}).includes('3 waiting')")
    row.get_by_role("button", name="Start").click()
    expect(page.locator(".flash.success")).to_contain_text("start requested")
    expect(row.locator('[data-field="state"]')).to_have_text("running")
    expect(row.locator('[data-field="messages_sent"]')).to_have_text("3")  # live, no reload
    expect(row.locator('[data-field="backlog"]')).to_have_text("0")
    assert page.evaluate(f"window.batonChannels.edgeLabel({name!r})").find("3 sent") >= 0
    assert api.get(f"/api/brokers/{target}/queues/IN/").json()["depth"] == 3
    page.reload()  # the chart's history is the server's, not the page's
    page.wait_for_function("() => window.batonChannels.sent()[1].reduce((a, b) => a + b, 0) > 0")
    assert page.evaluate(LABELS_OUT_OF_FRAME) == []
    row.get_by_role("button", name="Stop").click()
    expect(row.locator('[data-field="state"]')).to_have_text("stopped")
    assert page.console.errors == []


LABELS_OUT_OF_FRAME = """() => { const cy = window.batonChannels.cy;
  return cy.elements().filter((e) => { const b = e.renderedBoundingBox({ includeLabels: true });
    return b.x1 < 0 || b.y1 < 0 || b.x2 > cy.width() || b.y2 > cy.height(); }).map((e) => e.id()); }"""

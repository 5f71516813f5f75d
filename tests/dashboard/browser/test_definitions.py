"""The definitions page in a real browser: a superuser downloads the document, pastes one
that adds a broker and queues, sees the plan as a diff, applies it, and plans again to find
nothing left to change; a refused change is shown and nothing is applied."""

from __future__ import annotations

import json

from playwright.sync_api import expect


def test_a_document_is_planned_as_a_diff_then_applied(admin_page, site, api, fresh_broker):
    page = admin_page
    page.goto(f"{site.url}/")
    page.get_by_role("link", name="Definitions").click()
    expect(page.locator("h1")).to_have_text("Definitions")
    with page.expect_download() as download:
        page.locator("#export-json").click()
    exported = json.loads(download.value.path().read_text())
    assert exported["format"] == "baton-definitions/1"
    assert {"broker": fresh_broker, "name": "Q1"} in exported["queues"]

    broker = f"{fresh_broker}D"
    document = {
        "format": "baton-definitions/1",
        "brokers": [{"name": broker, "description": "from the console"}],
        "queues": [
            {"broker": broker, "name": "ORDERS", "max_depth": 10},
            {"broker": fresh_broker, "name": "Q1", "max_depth": 42},
        ],
    }
    page.fill("#definitions-text", json.dumps(document))
    page.get_by_role("button", name="Plan").click()
    rows = page.locator("#definitions-diff tbody tr")
    expect(rows).to_have_count(3)
    expect(rows.nth(0)).to_have_class("create")
    expect(rows.nth(0)).to_contain_text(broker)
    expect(page.locator("#definitions-diff tr.alter")).to_contain_text(f"{fresh_broker}/Q1")
    expect(page.locator("#definitions-diff tr.alter")).to_contain_text('"max_depth": 42')
    assert api.get(f"/api/brokers/{broker}/").status_code == 404  # a plan changes nothing

    page.get_by_role("button", name="Apply").click()
    expect(page.locator("#definitions-result")).to_contain_text("Applied: 3 change(s) made.")
    assert api.get(f"/api/brokers/{broker}/queues/ORDERS/").json()["max_depth"] == 10
    assert api.get(f"/api/brokers/{fresh_broker}/queues/Q1/").json()["max_depth"] == 42
    expect(page.get_by_role("button", name="Apply")).to_be_disabled()

    page.get_by_role("button", name="Plan").click()
    expect(page.locator("#definitions-result")).to_contain_text("No changes")

    # a queue holding messages keeps its read order: refused, shown, nothing applied
    assert api.post(f"/api/brokers/{broker}/queues/ORDERS/messages/", json={"body": "kept"}).status_code == 201
    document["queues"][0]["read_order"] = "commit"
    document["brokers"][0]["description"] = "not applied"
    page.fill("#definitions-text", json.dumps(document))
    page.get_by_role("button", name="Plan").click()
    expect(page.locator("#definitions-diff tr.refused")).to_contain_text("not_empty")
    expect(page.locator("#definitions-result")).to_contain_text("would be refused")
    expect(page.get_by_role("button", name="Apply")).to_be_disabled()
    assert api.get(f"/api/brokers/{broker}/").json()["description"] == "from the console"
    assert page.console.errors == []

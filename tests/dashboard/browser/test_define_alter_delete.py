"""Define, alter and delete a queue from the console in Chromium: the broker page's form,
the queue page's alter and delete, a refusal shown in the form."""

from __future__ import annotations

from playwright.sync_api import expect


def test_define_alter_and_delete_a_queue(admin_page, site, api, fresh_broker):
    page = admin_page
    page.goto(f"{site.url}/brokers/{fresh_broker}/")
    form = page.locator('form[data-form="queue-define"]')
    form.locator('input[name="name"]').fill("Q1")  # taken: the service's refusal in the form
    form.get_by_role("button", name="Define queue").click()
    expect(page.locator('[data-c="form-errors"]')).to_contain_text("Q1")
    page.locator('form[data-form="queue-define"] input[name="name"]').fill("ORDERS/EU")
    page.locator('form[data-form="queue-define"] input[name="description"]').fill("orders from Europe")
    page.get_by_role("button", name="Define queue").click()
    expect(page).to_have_url(f"{site.url}/brokers/{fresh_broker}/queues/ORDERS/EU/")
    expect(page.locator(".flash.success")).to_contain_text("Defined queue ORDERS/EU")
    body = api.get(f"/api/brokers/{fresh_broker}/queues/ORDERS/EU/").json()
    assert body["description"] == "orders from Europe" and body["put_enabled"] is True

    page.locator('[data-c="queue-alter"]').click()
    page.fill('input[name="max_depth"]', "-1")  # the form's shape: refused before any operation
    page.select_option('select[name="put_enabled"]', "false")
    page.get_by_role("button", name="Save changes").click()
    expect(page.locator('[data-field-name="max_depth"] .field-error')).to_be_visible()
    page.fill('input[name="max_depth"]', "12")
    page.get_by_role("button", name="Save changes").click()
    expect(page.locator(".flash.success")).to_contain_text("max_depth, put_enabled")
    body = api.get(f"/api/brokers/{fresh_broker}/queues/ORDERS/EU/").json()
    assert body["max_depth"] == 12 and body["put_enabled"] is False and body["description"] == "orders from Europe"

    page.locator('[data-c="queue-delete"]').click()
    page.locator('form[data-form="queue-delete"]').get_by_role("button").click()
    expect(page).to_have_url(f"{site.url}/brokers/{fresh_broker}/")
    expect(page.locator(".flash.success")).to_contain_text("Deleted queue ORDERS/EU")
    assert api.get(f"/api/brokers/{fresh_broker}/queues/ORDERS/EU/").status_code == 404
    expect(page.locator('#queue-table tr[data-queue="ORDERS/EU"]')).to_have_count(0)
    refusals = ("status of 409 (Conflict)", "status of 400 (Bad Request)")  # the refused forms' own answers
    assert [e for e in page.console.errors if not e.endswith(refusals)] == []

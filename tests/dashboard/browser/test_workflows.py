"""The workflow pages in a real browser: the broker's workflows and instances with counts
and filters, and one instance live: its steps' graph and table follow the units of work
(in flight, held with a held edge, committed) as the dashboard's socket pushes them (the
page asks the server for nothing after loading), the compensation path, and the abort
action."""

from __future__ import annotations

from playwright.sync_api import expect


def _ok(response, status=200):
    assert response.status_code == status, response.text[:400]
    return response.json()


def test_workflow_pages_follow_an_instance_live(admin_page, site, api, fresh_broker):
    b = fresh_broker
    for q in ("V", "A", "P", "cV", "cA", "cP"):
        _ok(api.post(f"/api/brokers/{b}/queues/", json={"name": q}), 201)
    _ok(
        api.post(
            f"/api/brokers/{b}/workflows/",
            json={
                "name": "claim",
                "steps": [
                    {"name": "validate", "queue": "V", "compensation_queue": "cV"},
                    {"name": "approve", "queue": "A", "compensation_queue": "cA"},
                    {"name": "pay", "queue": "P", "compensation_queue": "cP"},
                ],
            },
        ),
        201,
    )
    instance = _ok(api.post(f"/api/brokers/{b}/workflows/claim/instances/", json={"body": "42"}), 201)["id"]
    page = admin_page
    page.goto(f"{site.url}/brokers/{b}/workflows/")
    running = page.locator('#workflow-table tr[data-workflow="claim"] td[data-state="running"]')
    expect(running).to_have_text("1")
    expect(page.locator("#live-status")).to_have_attribute("data-live", "true")
    page.evaluate("window.notReloaded = true")
    _ok(api.post(f"/api/brokers/{b}/workflows/claim/instances/", json={"body": "43"}), 201)
    expect(running).to_have_text("2")  # the list's counts follow by push
    assert page.evaluate("window.notReloaded") is True
    page.locator(f'#instance-table tr[data-instance-id="{instance}"] a').click()
    expect(page.locator("#wf-state")).to_have_text("running")
    expect(page.locator("#live-status")).to_have_attribute("data-live", "true")
    asked = []  # what the page fetches once loaded: nothing (no polling)
    page.on("request", lambda request: asked.append(request.url) if "/workflow-instances/" in request.url else None)
    assert page.evaluate("window.batonWorkflow.cy.nodes().length") == 3
    assert page.evaluate("window.batonWorkflow.cy.edges().length") == 2

    def begin() -> str:
        return _ok(api.post(f"/api/brokers/{b}/transactions/", json={}), 201)["id"]

    first = begin()
    _ok(api.post(f"/api/brokers/{b}/queues/V/get/", json={"transaction": first}))
    row = page.locator('#step-table tr[data-step="validate"]')
    expect(row).to_have_attribute("data-state", "in_flight")
    _ok(
        api.post(
            f"/api/workflow-instances/{instance}/steps/validate/complete/",
            json={"transaction": first, "output": {"body": "ok"}, "compensation": {"body": "undo"}},
        )
    )
    second = begin()
    got = _ok(api.post(f"/api/brokers/{b}/queues/A/get/", json={"transaction": second, "preemptive": True}))
    assert got["messages"], "the uncommitted request is taken pre-emptively"
    _ok(api.post(f"/api/workflow-instances/{instance}/steps/approve/complete/", json={"transaction": second}))
    assert api.post(f"/api/transactions/{second}/commit/", json={}).status_code == 202  # held on the first
    expect(page.locator('#step-table tr[data-step="approve"]')).to_have_attribute("data-state", "held")
    page.wait_for_function("() => window.batonWorkflow.cy.edges('.held').length === 1")
    _ok(api.post(f"/api/transactions/{first}/commit/", json={}))
    expect(row).to_have_attribute("data-state", "committed")
    expect(page.locator('#step-table tr[data-step="approve"]')).to_have_attribute("data-state", "committed")
    expect(page.locator("#wf-path li")).to_have_text(["approve", "validate"])
    page.wait_for_function("() => window.batonWorkflow.cy.edges('.held').length === 0")
    expect(page.locator("#history-table tbody tr")).to_have_count(5)  # started, 2 steps completed, 2 committed
    assert asked == [] and page.evaluate("window.batonWorkflow.updates") > 0
    page.reload()
    page.fill("input[name=reason]", "withdrawn")
    page.click("#wf-abort")
    expect(page.locator(".flash.success")).to_contain_text("compensating")
    expect(page.locator('#step-table tr[data-step="approve"]')).to_have_attribute("data-state", "compensating")
    expect(page.locator("#history-table")).to_contain_text("withdrawn")
    page.goto(f"{site.url}/brokers/{b}/workflows/?state=compensating")
    expect(page.locator("#instance-table tbody tr")).to_have_count(1)
    assert page.console.errors == []

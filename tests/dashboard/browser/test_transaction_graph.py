"""The transaction graph page in a real browser: its table (#transaction-table, one row per
unit of work with data-transaction-id and data-state) follows the platform live when a held
commit is released and when a rollback cascades."""

from __future__ import annotations

from playwright.sync_api import expect


def begin(api, broker: str) -> str:
    response = api.post(f"/api/brokers/{broker}/transactions/", json={})
    assert response.status_code == 201, response.text
    return response.json()["id"]


def linked_pair(api, broker: str) -> tuple[str, str]:
    """A producer with an uncommitted put and a consumer that took it pre-emptively."""
    producer, consumer = begin(api, broker), begin(api, broker)
    put = api.post(f"/api/brokers/{broker}/queues/Q1/messages/", json={"body": "p", "transaction": producer})
    assert put.status_code == 201, put.text
    got = api.post(f"/api/brokers/{broker}/queues/Q1/get/", json={"transaction": consumer, "preemptive": True})
    assert got.status_code == 200 and got.json()["messages"], got.text
    return producer, consumer


def row(page, transaction_id: str):
    return page.locator(f'#transaction-table tr[data-transaction-id="{transaction_id}"]')


def test_table_follows_a_held_commit_and_its_release(admin_page, site, api, fresh_broker):
    page = admin_page
    page.goto(f"{site.url}/brokers/{fresh_broker}/transactions/")
    expect(page.locator("#graph-root")).to_have_attribute("data-ready", "true")
    producer, consumer = linked_pair(api, fresh_broker)
    expect(row(page, consumer)).to_have_attribute("data-state", "active")
    expect(row(page, consumer)).to_have_attribute("data-upstream", producer)

    held = api.post(f"/api/transactions/{consumer}/commit/", json={"wait": 0})
    assert held.status_code == 202 and held.json()["state"] == "commit_held", held.text
    expect(row(page, consumer)).to_have_attribute("data-state", "commit_held")
    expect(row(page, consumer)).to_contain_text(f"held on {producer[:8]}")

    row(page, consumer).click()  # the detail panel says why it is held
    expect(page.locator('#detail [data-f="held"]')).to_contain_text(producer[:8])
    row(page, producer).click()  # and what a rollback of the producer would cascade to
    expect(page.locator('#detail [data-f="cascade"]')).to_contain_text(consumer[:8])

    assert api.post(f"/api/transactions/{producer}/commit/", json={}).status_code == 200
    expect(row(page, producer)).to_have_attribute("data-state", "committed")
    expect(row(page, consumer)).to_have_attribute("data-state", "committed")
    assert page.console.errors == []


def test_table_follows_a_cascading_rollback(admin_page, site, api, fresh_broker):
    page = admin_page
    page.goto(f"{site.url}/brokers/{fresh_broker}/transactions/")
    expect(page.locator("#graph-root")).to_have_attribute("data-ready", "true")
    producer, consumer = linked_pair(api, fresh_broker)
    expect(row(page, consumer)).to_have_attribute("data-state", "active")

    response = api.post(f"/api/transactions/{producer}/rollback/", json={})
    assert response.status_code == 200 and consumer in response.json()["cascaded"], response.text
    expect(row(page, producer)).to_have_attribute("data-state", "rolled_back")
    expect(row(page, consumer)).to_have_attribute("data-state", "rolled_back")
    expect(row(page, consumer)).to_contain_text("cascade")
    assert page.console.errors == []


def test_filters_hide_rows(admin_page, site, api, fresh_broker):
    page = admin_page
    producer, consumer = linked_pair(api, fresh_broker)
    page.goto(f"{site.url}/brokers/{fresh_broker}/transactions/")
    expect(row(page, producer)).to_be_visible()
    page.uncheck('#filters input[value="active"]')
    expect(row(page, producer)).to_be_hidden()
    page.check('#filters input[value="active"]')
    expect(row(page, producer)).to_be_visible()
    page.select_option('#filters select[name="age"]', "600")  # older than 10 minutes: these are not
    expect(row(page, producer)).to_be_hidden()
    page.select_option('#filters select[name="age"]', "0")
    page.fill('#filters input[name="search"]', consumer[:10])
    expect(row(page, producer)).to_be_hidden()
    expect(row(page, consumer)).to_be_visible()
    api.post(f"/api/transactions/{producer}/rollback/", json={})


def test_queue_filter_from_the_snapshot_and_live(admin_page, site, api, fresh_broker):
    page = admin_page
    producer, consumer = linked_pair(api, fresh_broker)  # both on Q1
    page.goto(f"{site.url}/brokers/{fresh_broker}/transactions/")
    expect(page.locator("#graph-root")).to_have_attribute("data-ready", "true")
    expect(row(page, producer)).to_have_attribute("data-queues", "Q1")
    page.select_option('#filters select[name="queue"]', "Q2")
    expect(row(page, producer)).to_be_hidden()
    expect(row(page, consumer)).to_be_hidden()
    later = begin(api, fresh_broker)  # arrives in a delta, with the queue it put to
    assert (
        api.post(
            f"/api/brokers/{fresh_broker}/queues/Q2/messages/", json={"body": "x", "transaction": later}
        ).status_code
        == 201
    )
    expect(row(page, later)).to_have_attribute("data-queues", "Q2")
    expect(row(page, later)).to_be_visible()
    page.select_option('#filters select[name="queue"]', "")
    expect(row(page, producer)).to_be_visible()
    row(page, producer).click()
    expect(page.locator('#detail [data-f="queues"]')).to_have_text("Q1")
    for t in (producer, later):
        api.post(f"/api/transactions/{t}/rollback/", json={})
    assert page.console.errors == []


ALL_NODES_IN_FRAME = """() => { const cy = window.batonGraph.cy;
  return cy.nodes().filter((n) => { const b = n.renderedBoundingBox({ includeLabels: true });
    return b.x1 < 0 || b.y1 < 0 || b.x2 > cy.width() || b.y2 > cy.height(); }).map((n) => n.id()); }"""


def test_a_selected_unit_of_work_does_not_push_the_drawing_out_of_frame(admin_page, site, api, fresh_broker):
    """The page opened with a unit of work named after '#' (as the message pages link to it)
    keeps every node of a small graph inside the drawing."""
    pairs = [linked_pair(api, fresh_broker) for _ in range(6)]
    page = admin_page
    page.goto(f"{site.url}/brokers/{fresh_broker}/transactions/#{pairs[-1][0]}")
    expect(page.locator("#graph-root")).to_have_attribute("data-ready", "true")
    expect(page.locator('#detail [data-f="id"]')).to_have_text(pairs[-1][0])
    assert page.evaluate(ALL_NODES_IN_FRAME) == []
    for producer, _ in pairs:
        api.post(f"/api/transactions/{producer}/rollback/", json={})


CASCADE_EDGE = "(id) => window.batonGraph.cy.getElementById(`cascade:${id}`).nonempty()"


def test_it_opens_on_the_live_part_with_past_cascades(admin_page, site, api, fresh_broker):
    done = begin(api, fresh_broker)
    assert api.post(f"/api/transactions/{done}/commit/", json={}).status_code == 200
    root, member = linked_pair(api, fresh_broker)
    assert api.post(f"/api/transactions/{root}/rollback/", json={}).json()["cascaded"] == [member]
    live = begin(api, fresh_broker)
    page = admin_page
    page.goto(f"{site.url}/brokers/{fresh_broker}/transactions/")
    expect(page.locator("#graph-root")).to_have_attribute("data-ready", "true")
    expect(row(page, live)).to_have_attribute("data-state", "active")
    expect(row(page, member)).to_have_attribute("data-state", "rolled_back")
    expect(row(page, root)).to_have_attribute("data-state", "rolled_back")
    expect(row(page, done)).to_have_count(0)  # resolved, related to nothing live
    assert page.evaluate(CASCADE_EDGE, member)
    row(page, member).click()
    expect(page.locator('#detail [data-f="cause"]')).to_have_text(root)
    expect(page.locator("#rollback")).to_be_hidden()  # resolved: nothing to roll back
    api.post(f"/api/transactions/{live}/rollback/", json={})
    assert page.console.errors == []


def test_the_detail_panel_shows_owner_and_age_and_rolls_back(admin_page, site, api, fresh_broker):
    page = admin_page
    producer, consumer = linked_pair(api, fresh_broker)
    page.goto(f"{site.url}/brokers/{fresh_broker}/transactions/#{producer}")
    expect(page.locator('#detail [data-f="id"]')).to_have_text(producer)
    expect(page.locator('#detail [data-f="owner"]')).to_have_text("tester")  # the API client's user
    expect(page.locator('#detail [data-f="age"]')).to_contain_text("open")
    expect(row(page, producer).locator('[data-c="owner"]')).to_have_text("tester")
    page.click("#rollback-ask")
    expect(page.locator("#rollback-confirm")).to_contain_text("and the 1 open unit of work downstream")
    page.click("#rollback-go")
    expect(page.locator("#rollback-result")).to_contain_text(f"backed out with it: {consumer[:8]}")
    expect(row(page, producer)).to_have_attribute("data-state", "rolled_back")
    expect(row(page, consumer)).to_have_attribute("data-state", "rolled_back")
    page.wait_for_function(CASCADE_EDGE, arg=consumer)  # the cascade drawn as it happened
    expect(page.locator("#rollback")).to_be_hidden()
    assert page.console.errors == []


def test_a_viewer_is_offered_no_rollback(browser_page, site, api, fresh_broker, viewer_of):
    from .conftest import sign_in

    producer, _ = linked_pair(api, fresh_broker)
    sign_in(browser_page, site, *viewer_of(fresh_broker))
    browser_page.goto(f"{site.url}/brokers/{fresh_broker}/transactions/#{producer}")
    expect(browser_page.locator('#detail [data-f="id"]')).to_have_text(producer)
    expect(browser_page.locator("#rollback")).to_be_hidden()
    api.post(f"/api/transactions/{producer}/rollback/", json={})

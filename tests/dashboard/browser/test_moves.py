"""Resubmitting messages of a backout queue from the queue page, in a real browser against
a real worker: the job's page follows its progress live (pushed over its socket)."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.integration.servers import manage


def backout_queue_with(api, broker: str, n: int) -> list[str]:
    """APP (backout threshold 1 → APP.BACKOUT) whose ``n`` messages were rolled back once."""
    assert api.post(f"/api/brokers/{broker}/queues/", json={"name": "APP.BACKOUT"}).status_code == 201
    assert (
        api.post(
            f"/api/brokers/{broker}/queues/",
            json={"name": "APP", "backout_threshold": 1, "backout_queue": "APP.BACKOUT"},
        ).status_code
        == 201
    )
    put = api.post(
        f"/api/brokers/{broker}/queues/APP/messages/", json={"messages": [{"body": f'{{"n": {i}}}'} for i in range(n)]}
    )
    assert put.status_code == 201, put.text
    txn = api.post(f"/api/brokers/{broker}/transactions/", json={}).json()["id"]
    got = api.post(f"/api/brokers/{broker}/queues/APP/get/", json={"transaction": txn, "batch": n})
    assert len(got.json()["messages"]) == n, got.text
    assert api.post(f"/api/transactions/{txn}/rollback/", json={}).status_code == 200
    browsed = api.get(f"/api/brokers/{broker}/queues/APP.BACKOUT/messages/").json()["messages"]
    assert len(browsed) == n
    return [m["msg_id"] for m in browsed]


def test_resubmit_selected_messages_and_follow_the_job(admin_page, site, api, fresh_broker):
    ids = backout_queue_with(api, fresh_broker, 4)
    page = admin_page
    page.goto(f"{site.url}/brokers/{fresh_broker}/queues/APP.BACKOUT/")
    page.check("#select-page")
    expect(page.locator("#move-selected")).to_have_text("4 selected on this page")
    page.uncheck(f'input[name="msg_id"][value="{ids[3]}"]')
    page.check('input[name="action"][value="resubmit"]')
    page.click("#move-submit")
    expect(page.locator("h1")).to_contain_text("resubmit to their original queues")
    expect(page.locator("#live-status")).to_have_attribute("data-live", "true")
    expect(page.locator("#job")).to_have_attribute("data-state", "succeeded")  # pushed as the worker finished
    expect(page.locator('#job [data-f="moved"]')).to_have_text("3")
    assert page.locator("#job-progress").evaluate("p => [p.value, p.max]") == [3, 3]
    back = api.get(f"/api/brokers/{fresh_broker}/queues/APP/messages/").json()["messages"]
    assert [m["msg_id"] for m in back] == ids[:3] and all(m["backout_count"] == 0 for m in back)
    left = api.get(f"/api/brokers/{fresh_broker}/queues/APP.BACKOUT/messages/").json()["messages"]
    assert [m["msg_id"] for m in left] == ids[3:]
    assert page.console.errors == []


RESUME = """
from django.contrib.auth import get_user_model
from dashboard.services import move_job_resume
move_job_resume(user=get_user_model().objects.get(username={user!r}), job_id={job})
"""


def test_a_stopped_job_shows_why_and_its_resume_is_followed_live(admin_page, site, api, fresh_broker):
    ids = backout_queue_with(api, fresh_broker, 2)
    assert api.patch(f"/api/brokers/{fresh_broker}/queues/APP/", json={"put_enabled": False}).status_code == 200
    page = admin_page
    page.goto(f"{site.url}/brokers/{fresh_broker}/queues/APP.BACKOUT/")
    page.check("#select-page")
    page.click("#move-submit")
    expect(page.locator("#job")).to_have_attribute("data-state", "failed")
    expect(page.locator('#job [data-f="error"]')).to_contain_text("inhibited")
    expect(page.locator("#resume-form")).to_be_visible()
    job = int(page.url.rstrip("/").rsplit("/", 1)[1])
    page.evaluate("window.notReloaded = true")
    assert api.patch(f"/api/brokers/{fresh_broker}/queues/APP/", json={"put_enabled": True}).status_code == 200
    manage(site.env, "shell", "-c", RESUME.format(user=site.username, job=job))  # as another tab's Resume would
    expect(page.locator("#job")).to_have_attribute("data-state", "succeeded")
    expect(page.locator('#job [data-f="moved"]')).to_have_text("2")
    expect(page.locator("#resume-form")).to_be_hidden()
    assert page.evaluate("window.notReloaded") is True  # followed over the socket, not by reloading
    back = api.get(f"/api/brokers/{fresh_broker}/queues/APP/messages/").json()["messages"]
    assert [m["msg_id"] for m in back] == ids
    assert page.console.errors == []

"""The console's Content-Security-Policy in a real browser (config/csp.py): every page is
served with it, and on none does Chromium report a violation (a ``securitypolicyviolation``
event or a console message), so nothing inline is left that the policy would block."""

from __future__ import annotations

from playwright.sync_api import expect

from config.csp import POLICY

from .conftest import sign_in

#: Collects what the page's document reports, before any of its own scripts run.
LISTEN = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__csp.push(`${e.violatedDirective} ${e.blockedURI} ${e.sourceFile}:${e.lineNumber}`);
});
"""


def _ok(response, status: int = 200) -> dict:
    assert response.status_code == status, response.text[:400]
    return response.json()


def _pages(api, broker: str) -> list[str]:
    """A path of every console page, with what it shows defined first."""
    msg_id = _ok(api.post(f"/api/brokers/{broker}/queues/Q1/messages/", json={"body": '{"n": 1}'}), 201)["msg_id"]
    for q in ("cQ1", "cQ2"):
        _ok(api.post(f"/api/brokers/{broker}/queues/", json={"name": q}), 201)
    steps = [
        {"name": "one", "queue": "Q1", "compensation_queue": "cQ1"},
        {"name": "two", "queue": "Q2", "compensation_queue": "cQ2"},
    ]
    _ok(api.post(f"/api/brokers/{broker}/workflows/", json={"name": "w", "steps": steps}), 201)
    instance = _ok(api.post(f"/api/brokers/{broker}/workflows/w/instances/", json={"body": "x"}), 201)["id"]
    _ok(api.post(f"/api/brokers/{broker}/topics/", json={"name": "T", "topic_string": "orders"}), 201)
    _ok(
        api.post(
            f"/api/brokers/{broker}/subscriptions/", json={"name": "S", "topic_filter": "orders/#", "queue": "Q2"}
        ),
        201,
    )
    return [
        "/",
        f"/brokers/{broker}/",
        f"/brokers/{broker}/queues/Q1/",
        f"/brokers/{broker}/queues/Q1/messages/{msg_id}/",
        f"/brokers/{broker}/queues/Q1/purge/",
        f"/brokers/{broker}/transactions/",
        f"/brokers/{broker}/workflows/",
        f"/workflow-instances/{instance}/",
        f"/brokers/{broker}/topics/",
        f"/brokers/{broker}/subscriptions/",
        "/channels/",
        "/analytics/",
        "/users/",
        "/definitions/",
        "/define/broker/",
        f"/brokers/{broker}/define/queue/",
        f"/brokers/{broker}/queues/Q1/alter/",
        f"/brokers/{broker}/queues/Q1/delete/",
    ]


def _violations(page) -> list[str]:
    reported = page.evaluate("window.__csp || []")
    logged = [e for e in page.console.errors if "Content Security Policy" in e]
    return reported + logged


def test_no_console_page_violates_its_content_security_policy(browser_page, site, api, fresh_broker):
    page = browser_page
    page.add_init_script(LISTEN)
    response = page.goto(f"{site.url}/login/")
    assert response.headers.get("content-security-policy") == POLICY
    assert _violations(page) == [], "/login/"
    sign_in(page, site, site.username, site.password)
    for path in _pages(api, fresh_broker):
        response = page.goto(f"{site.url}{path}")
        assert response.status == 200, path
        assert response.headers.get("content-security-policy") == POLICY, path
        expect(page.locator("h1")).to_be_visible()
        page.wait_for_load_state("networkidle")
        assert _violations(page) == [], path
        assert page.console.errors == [], path  # nor a script error on it


def test_an_injected_inline_script_is_refused(browser_page, site):
    """What the policy is for: markup that reached a page cannot run a script."""
    page = browser_page
    page.add_init_script(LISTEN)
    page.goto(f"{site.url}/login/")
    ran = page.evaluate(
        """() => {
            window.__ran = false;
            const s = document.createElement("script");
            s.textContent = "window.__ran = true";
            document.body.appendChild(s);  // an inline script allowed would have run by now
            return window.__ran;
        }"""
    )
    assert ran is False
    page.wait_for_function("window.__csp.some((v) => v.startsWith('script-src'))")

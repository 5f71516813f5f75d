"""A STOMP connection seen live on its queue's page and on its broker's page, closed from
the console: the client gets an ERROR "Closed by an operator." and is dropped, and its row
goes from the page by push (Chromium, against a real platform)."""

from __future__ import annotations

from playwright.sync_api import expect

from .test_stompjs import BUNDLE

CLIENT = """async ({url, login, passcode, host, destination}) => {
  const { Client } = window.BatonStomp;
  window.stompErrors = [];
  window.stompClosed = false;
  const client = new Client({ brokerURL: url, connectHeaders: { login, passcode, host }, reconnectDelay: 0 });
  const connected = new Promise((resolve, reject) => {
    client.onConnect = resolve;
    client.onStompError = (frame) => reject(new Error(frame.headers.message));
    client.onWebSocketError = () => reject(new Error("WebSocket error"));
    client.onWebSocketClose = () => reject(new Error("closed before CONNECTED"));
  });
  client.activate();
  await connected;
  client.onStompError = (frame) => window.stompErrors.push(frame.headers.message);
  client.onWebSocketClose = () => { window.stompClosed = true; };
  client.subscribe(destination, () => {}, { ack: "client" });
  return true;
}"""


def stomp_client_opened(chromium, site, broker: str, queue: str):
    """A page that is a STOMP client (@stomp/stompjs over the web server's /stomp/),
    subscribed to ``queue``; close it when done."""
    assert BUNDLE.exists(), f"{BUNDLE} is missing: build the dashboard's assets"
    page = chromium.new_page(bypass_csp=True)  # the bundle goes in inline: only an origin to run from
    page.goto(f"{site.url}/login/")
    page.add_script_tag(path=str(BUNDLE))
    args = {
        "url": f"{site.ws_url}/stomp/",
        "login": "tester",  # the token's user
        "passcode": site.token,
        "host": broker,
        "destination": f"/queue/{queue}",
    }
    assert page.evaluate(CLIENT, args) is True
    return page


def test_a_stomp_connection_appears_live_and_is_closed_from_the_console(chromium, admin_page, site, fresh_broker):
    page = admin_page
    page.goto(f"{site.url}/brokers/{fresh_broker}/queues/Q1/")
    expect(page.locator("#live-status")).to_have_attribute("data-live", "true")
    rows = page.locator('#consumer-table tr[data-kind="stomp"]')
    expect(rows).to_have_count(0)
    client = stomp_client_opened(chromium, site, fresh_broker, "Q1")
    try:
        expect(rows).to_have_count(1)  # by push: the page was not read again
        expect(rows.first.locator('[data-c="what"]')).to_have_text("STOMP subscription sub-0, ack client")
        expect(page.locator("#consumer-table tr.none")).to_be_hidden()
        broker_page = page.context.new_page()
        broker_page.goto(f"{site.url}/brokers/{fresh_broker}/")
        expect(broker_page.locator('#connection-table tr[data-kind="stomp"]')).to_contain_text("/queue/Q1")
        broker_page.close()

        rows.first.get_by_role("button", name="Close connection").click()
        expect(page).to_have_url(f"{site.url}/brokers/{fresh_broker}/queues/Q1/")
        expect(page.locator(".flash, .messages").first).to_contain_text("Closing STOMP connection")
        client.wait_for_function("() => window.stompErrors.length > 0 && window.stompClosed")
        assert client.evaluate("window.stompErrors") == ["Closed by an operator."]
        expect(rows).to_have_count(0)  # gone by push once the serving process dropped it
        expect(page.locator("#consumer-table tr.none")).to_be_visible()
    finally:
        client.close()
    assert page.console.errors == []


def test_a_stomp_connection_is_closed_from_the_overview(chromium, admin_page, site, fresh_broker):
    page = admin_page
    page.goto(f"{site.url}/")
    expect(page.locator("#live-status")).to_have_attribute("data-live", "true")
    client = stomp_client_opened(chromium, site, fresh_broker, "Q1")
    try:
        row = page.locator("#stomp-table tbody tr[data-session]", has_text=fresh_broker)
        expect(row).to_have_count(1)  # by push
        row.get_by_role("button", name="Close").click()
        expect(page).to_have_url(f"{site.url}/")
        client.wait_for_function("() => window.stompErrors.length > 0 && window.stompClosed")
        assert client.evaluate("window.stompErrors") == ["Closed by an operator."]
        expect(row).to_have_count(0)  # gone by push once the serving process dropped it
    finally:
        client.close()
    assert page.console.errors == []

"""@stomp/stompjs (the npm package, bundled by the project's build as dist/stomp.js) in
Chromium against the web server's /stomp/: the subprotocol handshake, a transaction, client
acknowledgement, text and binary bodies."""

from __future__ import annotations

import os
from pathlib import Path

BUNDLE = Path(
    os.environ.get("BATON_STOMPJS_BUNDLE")
    or Path(__file__).resolve().parents[3] / "dashboard" / "static" / "dashboard" / "dist" / "stomp.js"
)

SCRIPT = """async ({url, login, passcode, host}) => {
  const { Client } = window.BatonStomp;
  const got = [];
  const client = new Client({ brokerURL: url, connectHeaders: { login, passcode, host },
                              reconnectDelay: 0, heartbeatIncoming: 1000, heartbeatOutgoing: 1000 });
  const connected = new Promise((resolve, reject) => {
    client.onConnect = resolve;
    client.onStompError = (frame) => reject(new Error(frame.headers.message));
    client.onWebSocketError = () => reject(new Error("WebSocket error"));
  });
  client.activate();
  await connected;
  let subscription;
  const done = new Promise((resolve) => {
    subscription = client.subscribe("/queue/Q1", (message) => {
      const binary = message.headers["content-type"] === "application/octet-stream";
      got.push({ body: binary ? Array.from(message.binaryBody) : message.body,
                 colour: message.headers.colour || null });
      message.ack();
      if (got.length === 2) resolve();
    }, { ack: "client-individual" });
  });
  const tx = client.begin();
  client.publish({ destination: "/queue/Q1", body: "from the browser", headers: { colour: "blue", transaction: tx.id } });
  tx.commit();
  client.publish({ destination: "/queue/Q1", binaryBody: new Uint8Array([0, 1, 2, 255]),
                   headers: { "content-type": "application/octet-stream" } });
  await done;
  subscription.unsubscribe();  // applied before the SEND below: frames are applied in order
  const receipt = new Promise((resolve) => client.watchForReceipt("last", resolve));
  client.publish({ destination: "/queue/Q1", body: "kept", headers: { receipt: "last" } });
  await receipt;
  const version = client.connectedVersion, protocol = client.webSocket.protocol;
  await client.deactivate();
  return { got, version, protocol };
}"""


def test_stompjs_in_chromium(chromium, site, api, fresh_broker):
    assert BUNDLE.exists(), f"{BUNDLE} is missing: build the dashboard's assets (platform/lib.sh assets_ready)"
    # the bundle goes in as an inline script, which the console's Content-Security-Policy
    # refuses (config/csp.py): this page is only an origin to run the client from
    page = chromium.new_page(bypass_csp=True)
    try:
        page.goto(f"{site.url}/login/")
        page.add_script_tag(path=str(BUNDLE))
        result = page.evaluate(
            SCRIPT, {"url": f"{site.ws_url}/stomp/", "login": "tester", "passcode": site.token, "host": fresh_broker}
        )
    finally:
        page.close()
    assert (result["version"], result["protocol"]) == ("1.2", "v12.stomp")
    assert sorted(result["got"], key=str) == sorted(
        [{"body": "from the browser", "colour": "blue"}, {"body": [0, 1, 2, 255], "colour": None}], key=str
    )
    kept = api.get(f"/api/brokers/{fresh_broker}/queues/Q1/messages/").json()["messages"]
    assert [m["body"] for m in kept] == ["kept"]

"""The dashboard's overview lists the live STOMP connections: user, client, subscriptions,
open transactions; only on brokers the viewer may see."""

from __future__ import annotations

import time

from django.contrib.auth import get_user_model
from django.test import Client

from stomp_server.protocol import LIVE
from stomp_server.registry import registry_written

from .conftest import bye, connected


def test_the_overview_shows_stomp_connections(stomp_port, stomp_broker, token):
    before = set(LIVE)  # connections of earlier tests may still be ending in the server
    conn, seen = connected(stomp_port, token)
    conn.subscribe("/queue/Q1", id="s1", ack="client")
    conn.begin("t1", receipt="r")
    seen.wait(lambda: "r" in seen.receipts)
    written = registry_written(LIVE, {})
    [session] = set(written) - before
    row = written[session]
    assert (row["username"], row["broker"], row["open_transactions"], row["subscriptions"]) == (
        "tester",
        "QM1",
        1,
        [{"id": "s1", "destination": "/queue/Q1", "ack": "client", "unacknowledged": 0}],
    )
    page = Client()
    page.force_login(get_user_model().objects.get(username="tester"))
    html = page.get("/").content.decode()
    assert f'data-session="{session}"' in html and "/queue/Q1" in html
    viewer = get_user_model().objects.create_user("viewer", password="x-Secret-Pw-123")
    page.force_login(viewer)
    assert f'data-session="{session}"' not in page.get("/").content.decode()
    bye(conn)
    deadline = time.monotonic() + 30
    while session in LIVE and time.monotonic() < deadline:  # the server ends the connection after the receipt
        time.sleep(0.05)  # polling interval of a bounded loop
    assert session not in registry_written(LIVE, written)
    page.force_login(get_user_model().objects.get(username="tester"))
    assert f'data-session="{session}"' not in page.get("/").content.decode()

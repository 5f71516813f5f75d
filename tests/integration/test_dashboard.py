"""The dashboard on the real server: the overview page needs a login, and the WebSocket
/ws/overview/ pushes a fresh overview when queues change."""

from __future__ import annotations

import asyncio
import json
import re
import time

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

pytestmark = [pytest.mark.integration, pytest.mark.once]  # once: its servers use SQLite in either pass


def session_login(platform) -> httpx.Client:
    """Sign in through the console's /login/ as the superuser with a password; the client keeps the cookies."""
    client = httpx.Client(base_url=platform.url, follow_redirects=False, timeout=30)
    page = client.get("/login/")
    assert page.status_code == 200, page.text[:500]
    match = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert match, "no CSRF token on the login page"
    response = client.post(
        "/login/",
        data={
            "username": platform.username,
            "password": platform.password,
            "csrfmiddlewaretoken": match.group(1),
            "next": "/",
        },
    )
    assert response.status_code == 302, f"login failed: {response.status_code} {response.text[:500]}"
    assert client.cookies.get("sessionid"), "no session cookie after signing in"
    return client


def test_overview_page_redirects_anonymous_to_login(platform):
    response = httpx.get(f"{platform.url}/", follow_redirects=False, timeout=30)
    assert response.status_code == 302
    assert response.headers["location"].startswith("/login/")
    assert "next=/" in response.headers["location"]


def test_overview_page_for_signed_in_user(platform, live_broker):
    client = session_login(platform)
    try:
        response = client.get("/")
    finally:
        client.close()
    assert response.status_code == 200
    assert live_broker in response.text
    assert "/ws/overview/" in response.text


def queue_depth(overview: dict, broker: str, queue: str) -> int | None:
    for b in overview["data"]["brokers"]:
        if b["name"] == broker:
            for q in b["queues"]:
                if q["name"] == queue:
                    return q["depth"]
    return None


def test_overview_websocket_pushes_new_depth_after_a_put(platform, http, live_broker):
    client = session_login(platform)
    session_id = client.cookies["sessionid"]
    client.close()

    async def follow() -> tuple[dict, dict]:
        async with connect(
            f"{platform.ws_url}/ws/overview/",
            additional_headers={"Cookie": f"sessionid={session_id}", "Origin": platform.url},
            open_timeout=15,
        ) as ws:
            first = json.loads(await asyncio.wait_for(ws.recv(), 15))
            assert first["type"] == "overview", first
            assert live_broker in [b["name"] for b in first["data"]["brokers"]]
            assert queue_depth(first, live_broker, "Q1") == 0

            put = await asyncio.to_thread(
                http.post,
                f"/api/brokers/{live_broker}/queues/Q1/messages/",
                json={"body": "for the dashboard"},
            )
            assert put.status_code == 201, put.text

            deadline = time.monotonic() + 15
            while True:
                remaining = deadline - time.monotonic()
                assert remaining > 0, "no overview with the new depth arrived within 15 s"
                update = json.loads(await asyncio.wait_for(ws.recv(), remaining))
                if update["type"] == "overview" and queue_depth(update, live_broker, "Q1") == 1:
                    return first, update

    first, update = asyncio.run(follow())
    assert update["data"]["journal_position"] > first["data"]["journal_position"]


def test_overview_websocket_refuses_anonymous(platform, live_broker):
    async def attempt() -> None:
        async with connect(f"{platform.ws_url}/ws/overview/", open_timeout=15) as ws:
            await asyncio.wait_for(ws.recv(), 15)

    with pytest.raises((InvalidStatus, ConnectionClosed)):
        asyncio.run(attempt())


def test_overview_websocket_shows_a_channel_and_its_state(platform, http, live_broker):
    """A channel defined and started through the API appears on the live overview with its
    state as the worker fleet reports it."""
    assert (
        http.post(f"/api/brokers/{live_broker}/queues/", json={"name": "FAR", "usage": "transmission"}).status_code
        == 201
    )
    name = f"{live_broker}.TO.FAR"
    response = http.post(
        "/api/channels/",
        json={
            "name": name,
            "source_broker": live_broker,
            "transmission_queue": "FAR",
            "target_broker": "FAR",
            "target_url": "http://127.0.0.1:9",
            "target_token": "x",
        },
    )
    assert response.status_code == 201, response.text
    assert http.post(f"/api/brokers/{live_broker}/queues/FAR/messages/", json={"body": "x"}).status_code == 201
    assert http.post(f"/api/channels/{name}/start/").status_code == 200
    client = session_login(platform)
    session_id = client.cookies["sessionid"]
    client.close()

    async def follow() -> dict:
        async with connect(
            f"{platform.ws_url}/ws/overview/",
            additional_headers={"Cookie": f"sessionid={session_id}", "Origin": platform.url},
            open_timeout=15,
        ) as ws:
            deadline = time.monotonic() + 30
            while True:
                remaining = deadline - time.monotonic()
                assert remaining > 0, "the overview never showed the channel retrying"
                update = json.loads(await asyncio.wait_for(ws.recv(), remaining))
                channels = {c["name"]: c for c in update["data"].get("channels", [])}
                if name in channels and channels[name]["state"] == "retrying":
                    return channels[name]

    channel = asyncio.run(follow())
    assert channel["source_broker"] == live_broker and channel["last_error"]
    http.post(f"/api/channels/{name}/stop/")

"""What issue 16 found in the dashboard, checked here: the WebSockets refuse a foreign Origin
and accept the site's own; each user's sockets carry only the brokers they may see (the
graph leaves out linked units of work elsewhere); users who are not staff can sign in; the
API docs load Swagger UI and ReDoc from this server (drf-spectacular-sidecar), not a CDN."""

from __future__ import annotations

import asyncio
import json
import re

import pytest
from asgiref.sync import sync_to_async
from asgiref.testing import ApplicationCommunicator
from channels.auth import AuthMiddlewareStack
from channels.routing import URLRouter
from django.contrib.auth import get_user_model
from django.db import connections

from dashboard.routing import websocket_urlpatterns
from transactions.manager import transaction_begin
from transactions.models import Link

from .conftest import make_user

APP = AuthMiddlewareStack(URLRouter(websocket_urlpatterns))


def first_frame(client, path: str, origin: str):
    """Open a WebSocket to ``path`` with the test client's session cookie, from ``origin``:
    the first JSON frame it sends, or ``("closed", code)``."""
    cookie = f"sessionid={client.cookies['sessionid'].value}"
    headers = [(b"host", b"localhost"), (b"origin", origin.encode()), (b"cookie", cookie.encode())]
    scope = {
        "type": "websocket",
        "path": path,
        "raw_path": path.encode(),
        "headers": headers,
        "query_string": b"",
        "subprotocols": [],
    }

    async def attempt():
        communicator = ApplicationCommunicator(APP, scope)
        await communicator.send_input({"type": "websocket.connect"})
        try:
            answer = await communicator.receive_output(10)
            if answer["type"] == "websocket.accept":
                answer = await communicator.receive_output(10)
            if answer["type"] == "websocket.close":
                return "closed", answer.get("code")
            return json.loads(answer["text"])
        finally:
            await communicator.send_input({"type": "websocket.disconnect", "code": 1000})
            try:
                await communicator.wait(5)
            except Exception:
                communicator.future.cancel()
            # the consumers' database thread keeps its connection: close it with the test
            await sync_to_async(connections.close_all, thread_sensitive=True)()

    return asyncio.run(attempt())


@pytest.mark.django_db(transaction=True)
def test_sockets_accept_the_sites_origin_and_carry_only_what_the_user_sees(viewer_client):
    overview = first_frame(viewer_client, "/ws/overview/", "http://localhost")
    assert overview["type"] == "overview"
    assert [b["name"] for b in overview["data"]["brokers"]] == ["SEEN"]
    refused = first_frame(viewer_client, "/ws/overview/", "http://evil.example")
    assert refused[0] == "closed"
    hidden = first_frame(viewer_client, "/ws/brokers/HIDDEN/transactions/", "http://localhost")
    assert hidden == ("closed", 4403)

    upstream = transaction_begin(broker="HIDDEN", timeout_ms=60_000)
    downstream = transaction_begin(broker="SEEN", timeout_ms=60_000)
    Link.objects.create(upstream=upstream, downstream=downstream, resource_ref="batch 1")
    graph = first_frame(viewer_client, "/ws/brokers/SEEN/transactions/", "http://localhost")
    assert graph["type"] == "graph"
    assert [n["id"] for n in graph["nodes"]] == [downstream.id] and graph["edges"] == []


def test_a_user_who_is_not_staff_signs_in_and_sees_the_overview(client, two_brokers):
    from brokers.services.access import grant_actions

    make_user("operator1")
    grant_actions(username="operator1", broker="SEEN", actions=["browse", "put", "get"])
    assert not get_user_model().objects.get(username="operator1").is_staff
    response = client.post("/login/", {"username": "operator1", "password": "pw-for-tests-123"})
    assert response.status_code == 302 and response.headers["location"] == "/"
    page = client.get("/").content.decode()
    assert 'data-broker="SEEN"' in page and 'data-broker="HIDDEN"' not in page


@pytest.mark.django_db
def test_api_docs_assets_are_served_by_this_server(admin_client):
    for path in ("/api/schema/docs/", "/api/schema/redoc/"):
        page = admin_client.get(path).content.decode()
        assets = set(re.findall(r'(?:src|href)="(/static/[^"]+)"', page))
        assert assets and all("drf_spectacular_sidecar" in a for a in assets if a.endswith(".js")), (path, assets)
        assert not re.search(r'(?:src|href)="(?:https?:)?//', page), path  # nothing from another host
        for asset in assets:
            response = admin_client.get(asset)
            assert response.status_code == 200, (asset, response.status_code)
            body = b"".join(response.streaming_content) if response.streaming else response.content
            assert len(body) > 100, asset


@pytest.mark.django_db(transaction=True)
def test_graph_socket_of_an_admin_shows_everything(admin_client, two_brokers):
    upstream = transaction_begin(broker="HIDDEN", timeout_ms=60_000)
    downstream = transaction_begin(broker="SEEN", timeout_ms=60_000)
    Link.objects.create(upstream=upstream, downstream=downstream, resource_ref="batch 1")
    graph = first_frame(admin_client, "/ws/brokers/SEEN/transactions/", "http://localhost")
    assert {n["id"] for n in graph["nodes"]} == {upstream.id, downstream.id} and len(graph["edges"]) == 1


def replies_to(client, path: str, frames: list[str]) -> list:
    """Open a socket from the site's origin, read its first push, send ``frames``; what came
    back: JSON frames, and ``("closed", code)`` when it closed."""
    cookie = f"sessionid={client.cookies['sessionid'].value}"
    headers = [(b"host", b"localhost"), (b"origin", b"http://localhost"), (b"cookie", cookie.encode())]
    scope = {
        "type": "websocket",
        "path": path,
        "raw_path": path.encode(),
        "headers": headers,
        "query_string": b"",
        "subprotocols": [],
    }

    async def attempt():
        communicator = ApplicationCommunicator(APP, scope)
        await communicator.send_input({"type": "websocket.connect"})
        seen = []
        try:
            assert (await communicator.receive_output(10))["type"] == "websocket.accept"
            assert json.loads((await communicator.receive_output(10))["text"])["type"] == "overview"
            for frame in frames:
                await communicator.send_input({"type": "websocket.receive", "text": frame})
                answer = await communicator.receive_output(10)
                while answer["type"] == "websocket.send" and json.loads(answer["text"])["type"] != "error":
                    answer = await communicator.receive_output(10)  # a live push between
                seen.append(json.loads(answer["text"]) if answer["type"] == "websocket.send" else answer)
                if answer["type"] == "websocket.send" and seen[-1]["code"] != "invalid":
                    closed = await communicator.receive_output(10)
                    seen.append(("closed", closed.get("code")))
                    break
            return seen
        finally:
            await communicator.send_input({"type": "websocket.disconnect", "code": 1000})
            try:
                await communicator.wait(5)
            except Exception:
                communicator.future.cancel()
            await sync_to_async(connections.close_all, thread_sensitive=True)()

    return asyncio.run(attempt())


@pytest.mark.django_db(transaction=True)
def test_frames_sent_to_a_dashboard_socket_are_refused_with_their_code(viewer_client):
    from dashboard.consumers import FRAMES_PER_MINUTE, MAX_FRAME_BYTES

    answers = replies_to(viewer_client, "/ws/overview/", ['{"op": "purge"}', "not json", "x" * (MAX_FRAME_BYTES + 1)])
    assert [a["code"] for a in answers[:3]] == ["invalid", "invalid", "message_too_large"]
    assert answers[3] == ("closed", 1009)
    answers = replies_to(viewer_client, "/ws/overview/", ["{}"] * (FRAMES_PER_MINUTE + 1))
    assert [a["code"] for a in answers[:-1]] == ["invalid"] * FRAMES_PER_MINUTE + ["throttled"]
    assert answers[-1] == ("closed", 1008)

"""A WebSocket handshake on a path no WebSocket route serves is refused as an HTTP server
refuses an unknown page (404), without an error-level line or a traceback in the web
server's log; a WebSocket path the user may not use is refused with 403; plain HTTP on a
WebSocket path is an ordinary 404 (or 426 where an upgrade is what the path wants)."""

from __future__ import annotations

import json

import httpx
import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from .servers import tail

pytestmark = [pytest.mark.integration, pytest.mark.once]  # once: its servers use SQLite in either pass

UNKNOWN_WEBSOCKET_PATHS = ["/nope/", "/ws/nope/", "/api/session/x/", "/ws/overview/extra/", "/stomp-nope/"]
HTTP_ONLY_PATHS = ["/api/brokers/", "/login/", "/"]


def handshake_status(platform, path: str) -> tuple[int, bytes]:
    """The status (and body) a WebSocket handshake on ``path`` is answered with."""
    try:
        with connect(f"{platform.ws_url}{path}", open_timeout=10):
            return 101, b""
    except InvalidStatus as refused:
        return refused.response.status_code, refused.response.body or b""


def uvicorn_log(platform) -> str:
    return "".join(tail(server.stderr, 10**7) for server in platform.named("uvicorn"))


@pytest.mark.parametrize("path", UNKNOWN_WEBSOCKET_PATHS + HTTP_ONLY_PATHS)
def test_a_handshake_on_a_path_without_a_websocket_is_refused_with_404(platform, path):
    before = len(uvicorn_log(platform))
    status, body = handshake_status(platform, path)
    assert status == 404
    assert json.loads(body)["code"] == "not_found"
    logged = uvicorn_log(platform)[before:]
    assert "Traceback" not in logged and "ERROR" not in logged, logged


def test_a_websocket_path_the_visitor_may_not_use_is_refused_with_403(platform):
    before = len(uvicorn_log(platform))
    status, _ = handshake_status(platform, "/ws/overview/")  # the dashboard's socket, not signed in
    assert status == 403
    logged = uvicorn_log(platform)[before:]
    assert "Traceback" not in logged and "ERROR" not in logged, logged


def test_the_session_path_still_upgrades(platform):
    assert handshake_status(platform, "/api/session/")[0] == 101


@pytest.mark.parametrize("path, status", [("/ws/overview/", 404), ("/ws/nope/", 404), ("/api/session/", 426)])
def test_plain_http_on_a_websocket_path_is_an_ordinary_client_error(platform, path, status):
    before = len(uvicorn_log(platform))
    response = httpx.get(f"{platform.url}{path}", timeout=10)
    assert response.status_code == status
    logged = uvicorn_log(platform)[before:]
    assert "Traceback" not in logged and "ERROR" not in logged, logged

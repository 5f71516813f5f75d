"""The dashboard's WebSocket routes at the ASGI level: a foreign Origin and an anonymous
user are refused before any consumer code runs."""

from __future__ import annotations

import asyncio

from asgiref.testing import ApplicationCommunicator
from channels.auth import AuthMiddlewareStack
from channels.routing import URLRouter

from dashboard.routing import websocket_urlpatterns

APP = AuthMiddlewareStack(URLRouter(websocket_urlpatterns))


def answer_to(path: str, origin: bytes | None) -> str:
    async def attempt() -> str:
        headers = [(b"host", b"localhost")] + ([(b"origin", origin)] if origin else [])
        scope = {
            "type": "websocket",
            "path": path,
            "raw_path": path.encode(),
            "headers": headers,
            "query_string": b"",
            "subprotocols": [],
        }
        communicator = ApplicationCommunicator(APP, scope)
        await communicator.send_input({"type": "websocket.connect"})
        answer = await communicator.receive_output(5)
        communicator.future.cancel()  # the refused connection's application is done with
        try:
            await communicator.future
        except (asyncio.CancelledError, Exception):
            pass
        return answer["type"]

    return asyncio.run(attempt())


def test_foreign_or_missing_origin_is_refused():
    for path in ("/ws/overview/", "/ws/brokers/BRK1/transactions/", "/ws/jobs/1/", "/ws/workflow-instances/x/"):
        assert answer_to(path, b"http://evil.example") == "websocket.close", path
        assert answer_to(path, None) == "websocket.close", path


def test_anonymous_user_is_refused_from_an_allowed_origin():
    for path in ("/ws/overview/", "/ws/jobs/1/", "/ws/workflow-instances/x/"):
        assert answer_to(path, b"http://localhost") == "websocket.close", path

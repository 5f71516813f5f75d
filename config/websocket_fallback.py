"""What a WebSocket handshake meets on a path no WebSocket route serves: a plain 404, as an
HTTP server answers an unknown page, and one line at info level (never a traceback).

Channels' ``URLRouter`` raises ``ValueError("No route found ...")`` for such a path, which
the server turns into a 500 and an error-level traceback per probe. This app is the last
route of the WebSocket router instead. It refuses the handshake with the ASGI "WebSocket
Denial Response" extension (``websocket.http.response``, which Uvicorn offers) so that the
client sees 404 and a JSON body with the API's error shape; a server without the extension
gets a close before accept, which it answers 403.

Uvicorn (0.54) logs "ASGI callable returned without completing handshake." at error level
after any denial response it was given, because it counts only an accept or a close as the
end of a handshake. ``_DeniedHandshakeFilter`` drops exactly that line, and only for a
handshake this app refused (a context variable set in the task that serves it); the same
line for any other application still reaches the log.
"""

from __future__ import annotations

import contextvars
import json
import logging

logger = logging.getLogger("baton.websocket")

DENIAL_EXTENSION = "websocket.http.response"
_UVICORN_DENIAL_LINE = "ASGI callable returned without completing handshake."

#: True in the task serving a handshake that this app refused with a denial response.
_refused_here: contextvars.ContextVar[bool] = contextvars.ContextVar("baton_websocket_refused", default=False)


class _DeniedHandshakeFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not (_refused_here.get() and record.getMessage() == _UVICORN_DENIAL_LINE)


def uvicorn_log_filter_install() -> None:
    """Install the filter on Uvicorn's error logger (once; called when this module loads)."""
    uvicorn_logger = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, _DeniedHandshakeFilter) for f in uvicorn_logger.filters):
        uvicorn_logger.addFilter(_DeniedHandshakeFilter())


uvicorn_log_filter_install()


async def websocket_not_found(scope, receive, send) -> None:
    """ASGI app: refuse a WebSocket handshake on a path that serves none with 404."""
    if scope["type"] != "websocket":  # the router sends only WebSocket scopes here
        raise ValueError(f"websocket_not_found serves WebSocket scopes, not {scope['type']!r}")
    message = await receive()
    if message["type"] != "websocket.connect":  # the client went away first
        return
    path = scope.get("path", "")
    client = scope.get("client") or ("?", 0)
    logger.info("WebSocket handshake refused with 404: no WebSocket at %s (from %s)", path[:200], client[0])
    if DENIAL_EXTENSION in scope.get("extensions", {}):
        body = json.dumps({"code": "not_found", "message": f"No WebSocket endpoint at {path[:200]}."}).encode()
        await send(
            {
                "type": "websocket.http.response.start",
                "status": 404,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
            }
        )
        _refused_here.set(True)  # the caller's task: Uvicorn logs its line after this returns
        await send({"type": "websocket.http.response.body", "body": body})
    else:
        await send({"type": "websocket.close", "code": 1008})

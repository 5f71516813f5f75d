"""STOMP over WebSocket at ``/stomp/`` (docs/api.md, "STOMP"): the subprotocols ``v12.stomp``,
``v11.stomp`` and ``v10.stomp`` are offered and the one chosen is echoed (a browser fails
the handshake otherwise). Frames may come in text or binary messages, split or several to
a message; each frame goes out as one message (binary when its bytes are not UTF-8)."""

from __future__ import annotations

from typing import Any

from channels.consumer import get_handler_name
from channels.exceptions import StopConsumer
from channels.generic.websocket import AsyncWebsocketConsumer

from .protocol import StompConnection

SUBPROTOCOLS = ("v12.stomp", "v11.stomp", "v10.stomp")


class WebSocketTransport:
    #: Each frame is a WebSocket message of its own.
    joins_frames = False

    def __init__(self, consumer: StompConsumer) -> None:
        self.consumer = consumer

    def write_nowait(self, data: bytes):
        """What to await to send ``data``: a WebSocket message is sent only by awaiting."""
        return self.write(data)

    async def write(self, data: bytes) -> None:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            await self.consumer.send(bytes_data=data)
        else:
            await self.consumer.send(text_data=text)

    async def close(self) -> None:
        await self.consumer.close()

    def abort(self) -> None:
        self.consumer.aborted = True
        self.consumer.connection.loop.create_task(self.consumer.close(code=1008))


class StompConsumer(AsyncWebsocketConsumer):
    connection: StompConnection
    aborted = False

    async def __call__(self, scope: dict[str, Any], receive, send) -> None:
        """Channels' consumer loop without a channel layer (a STOMP connection joins no
        group), as the session's (brokers/api/session.py)."""
        self.scope = scope
        self.base_send = send
        self.channel_layer = None
        try:
            while True:
                message = await receive()
                handler = getattr(self, get_handler_name(message), None)
                if handler is None:
                    raise ValueError(f"No handler for message type {message['type']}")
                await handler(message)
        except StopConsumer:
            pass

    async def connect(self) -> None:
        offered = self.scope.get("subprotocols") or []
        chosen = next((p for p in SUBPROTOCOLS if p in offered), None)
        client = self.scope.get("client") or ("?", 0)
        self.connection = StompConnection(
            WebSocketTransport(self), kind="websocket", peer=f"{client[0]}:{client[1]}", address=str(client[0])
        )
        self.connection.start()
        await self.accept(subprotocol=chosen)

    async def disconnect(self, code: int) -> None:
        self.connection.lost()

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        data = bytes_data if bytes_data is not None else (text_data or "").encode("utf-8")
        await self.connection.received(data)

"""STOMP over TCP: an asyncio server on ``BATON_STOMP_PORT`` at ``BATON_HOST`` (docs/api.md,
"STOMP"). Each connection is a :class:`~stomp_server.protocol.StompConnection`."""

from __future__ import annotations

import asyncio
import logging
import socket

from django.db import connections

from .orphans import stomp_orphans_removed
from .protocol import StompConnection

log = logging.getLogger(__name__)
READ_SIZE = 256 * 1024
#: The connections of each server running in this process.
_LIVE_SETS: list[set] = []


class TcpTransport:
    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self.writer = writer

    def write_nowait(self, data: bytes) -> bool:
        """Hand ``data`` to the socket; whether all of it went (else :meth:`drain` waits)."""
        self.writer.write(data)
        return self.writer.transport.get_write_buffer_size() == 0

    async def drain(self) -> None:
        await self.writer.drain()

    async def write(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def close(self) -> None:
        self.writer.close()

    def abort(self) -> None:
        """Close at once, dropping what is unsent (a client that does not read)."""
        self.writer.transport.abort()


async def _serve_one(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    peer = writer.get_extra_info("peername")
    connection = StompConnection(
        TcpTransport(writer), kind="tcp", peer=f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
    )
    connection.start()
    for live in _LIVE_SETS:
        live.add(connection)
    try:
        while data := await reader.read(READ_SIZE):
            await connection.received(data)
            if connection.closed:
                break
    except (ConnectionError, OSError):
        pass
    finally:
        connection.lost()
        for live in _LIVE_SETS:
            live.discard(connection)


async def stomp_serve(*, host: str, port: int, started: asyncio.Future | None = None) -> None:
    """Serve STOMP on ``host``:``port`` until cancelled, having first removed the non-durable
    topic subscriptions that processes which are gone left behind."""
    await asyncio.to_thread(_orphans_removed)
    server = await asyncio.start_server(_serve_one, host, port, limit=READ_SIZE)
    bound = server.sockets[0].getsockname()[1]
    if started is not None:
        started.set_result(bound)
    live: set[StompConnection] = set()
    _LIVE_SETS.append(live)
    try:
        async with server:
            await server.serve_forever()
    finally:
        _LIVE_SETS.remove(live)
        await connections_ended(live)


def _orphans_removed() -> None:
    try:
        stomp_orphans_removed()
    except Exception:  # never stops the server from starting
        log.exception("removing the STOMP subscriptions of processes that are gone failed")
    finally:
        connections.close_all()


async def connections_ended(live) -> None:
    """End these connections as if their clients had left, and wait until each has rolled
    back and given back what it held."""
    ending = list(live)
    for connection in ending:
        connection.transport.abort()
        connection.lost()
    await asyncio.to_thread(lambda: [c.applier.join() for c in ending])

"""STOMP over TCP: an asyncio server on ``BATON_STOMP_PORT`` at ``BATON_HOST`` (docs/api.md,
"STOMP"). Each connection is a :class:`~stomp_server.protocol.StompConnection`."""

from __future__ import annotations

import asyncio
import logging
import socket

from django.db import connections

from .orphans import stomp_orphans_removed
from .protocol import UNENDED, StompConnection

log = logging.getLogger(__name__)
#: Linux's TCP_QUICKACK (None elsewhere): acknowledge the client's segments at once, not
#: after the delayed-ACK timer (up to 40 ms). A client that writes each frame on its own
#: without TCP_NODELAY (stomp.py) has its next frames held by Nagle's algorithm until that
#: acknowledgement comes: a transaction's SENDs stalled 36-40 ms (docs/stomp.md, "Benchmark").
_QUICKACK = getattr(socket, "TCP_QUICKACK", None)
#: The connections of each server running in this process.
_LIVE_SETS: list[set] = []


class TcpTransport:
    #: A byte stream: frames sent together may go in one write.
    joins_frames = True

    def __init__(self, transport: asyncio.Transport, protocol: "StompProtocol") -> None:
        self.transport = transport
        self.protocol = protocol
        # the socket itself (asyncio's wrapper hides its ``send``), for :meth:`write_direct`
        sock = getattr(transport.get_extra_info("socket"), "_sock", None)
        if sock is not None:
            self.write_direct = sock.send

    #: ``write_direct(data)``: the socket's ``send`` (non-blocking: how many bytes it took;
    #: BlockingIOError when none), from any thread, while :meth:`idle`. The connection's pump
    #: makes sure that it never overtakes what the transport still holds, and that it ends
    #: before the transport closes the socket (brokers/api/pump.py).
    write_direct = None

    def idle(self) -> bool:
        """Nothing handed to the transport waits to be written (any thread)."""
        return self.transport.get_write_buffer_size() == 0

    def write_nowait(self, data: bytes):
        """Hand ``data`` to the socket: None when all of it went, else what to await until the
        socket has taken it (:meth:`drain`)."""
        self.transport.write(data)
        return None if self.transport.get_write_buffer_size() == 0 else self.drain()

    async def drain(self) -> None:
        """Wait until the socket has taken what was handed to it (down to asyncio's low-water
        mark), or the connection is gone."""
        while self.protocol.writing_paused and not self.transport.is_closing():
            await self.protocol.resumed()

    async def close(self) -> None:
        self.transport.close()

    def abort(self) -> None:
        """Close at once, dropping what is unsent (a client that does not read)."""
        self.transport.abort()


class StompProtocol(asyncio.Protocol):
    """One TCP connection: bytes go straight from the socket to the connection's parser (no
    stream reader between them); reading pauses while the connection's frames wait to be applied."""

    def __init__(self) -> None:
        self.connection: StompConnection | None = None
        self.writing_paused = False
        self._resumed: asyncio.Future | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:
        sock = transport.get_extra_info("socket")
        self.quickack = None
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if _QUICKACK is not None:
                # the socket itself: asyncio's wrapper's setsockopt costs a call per read more
                self.quickack = getattr(sock, "_sock", sock)
                sock.setsockopt(socket.IPPROTO_TCP, _QUICKACK, 1)
        peer = transport.get_extra_info("peername")
        self.transport = transport
        self.connection = StompConnection(
            TcpTransport(transport, self),
            kind="tcp",
            peer=f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer),
            address=peer[0] if isinstance(peer, tuple) else "",
        )
        self.connection.start()
        for live in _LIVE_SETS:
            live.add(self.connection)

    def data_received(self, data: bytes) -> None:
        if self.quickack is not None:  # Linux clears it as it pleases: again after each read
            self.quickack.setsockopt(socket.IPPROTO_TCP, _QUICKACK, 1)
        if not self.connection.received_nowait(data):
            self.transport.pause_reading()
            asyncio.get_running_loop().create_task(self._read_when_room())

    async def _read_when_room(self) -> None:
        await self.connection.room.wait()
        if not self.transport.is_closing():
            self.transport.resume_reading()

    def eof_received(self) -> bool:
        return False  # the client is done: close

    def connection_lost(self, exc: Exception | None) -> None:
        self.resume_writing()
        self.connection.lost()
        for live in _LIVE_SETS:
            live.discard(self.connection)

    def pause_writing(self) -> None:
        self.writing_paused = True

    def resume_writing(self) -> None:
        self.writing_paused = False
        if self._resumed is not None and not self._resumed.done():
            self._resumed.set_result(None)

    def resumed(self) -> asyncio.Future:
        if self._resumed is None or self._resumed.done():
            self._resumed = asyncio.get_running_loop().create_future()
        return self._resumed


async def stomp_serve(*, host: str, port: int, started: asyncio.Future | None = None) -> None:
    """Serve STOMP on ``host``:``port`` until cancelled, having first removed the non-durable
    topic subscriptions that processes which are gone left behind."""
    await asyncio.to_thread(_orphans_removed)
    server = await asyncio.get_running_loop().create_server(StompProtocol, host, port)
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
    # and those whose clients left before: their ends may still be under way
    ending += [c for c in list(UNENDED) if c.kind == "tcp" and c.closed and c not in ending]
    await asyncio.to_thread(lambda: [c.ended.wait() for c in ending])

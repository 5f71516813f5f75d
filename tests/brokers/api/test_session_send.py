"""How the session sends its replies (brokers/api/session.py, through brokers/api/pump.py): a reply the server takes at
once is sent on the spot, in order; one the server must hold (a client that stops reading)
holds the replies made after it, which follow in order once it is sent; one held longer than
``BATON_SESSION_SEND_TIMEOUT_S``, or unsent replies over ``BATON_SESSION_SEND_BUFFER``,
close the session with 1008. The server is an ASGI ``send`` that holds sends while its
client does not read, as Uvicorn's does (it waits until the transport is writable)."""

from __future__ import annotations

import asyncio

import pytest

from brokers.api.session import SessionConsumer

pytestmark = pytest.mark.once


class Server:
    def __init__(self) -> None:
        self.texts: list[str] = []
        self.closed: asyncio.Future = asyncio.get_running_loop().create_future()
        self.reading = asyncio.Event()
        self.reading.set()

    async def send(self, message: dict) -> None:
        if message["type"] == "websocket.close":
            if not self.closed.done():
                self.closed.set_result(message.get("code"))
            return
        await self.reading.wait()
        self.texts.append(message["text"])


def session(server: Server) -> SessionConsumer:
    consumer = SessionConsumer()
    consumer.base_send = server.send
    consumer.start_replies()
    return consumer


def test_replies_the_server_takes_are_sent_at_once_in_order():
    async def run():
        server = Server()
        s = session(server)
        for text in ("a", "bb", "ccc"):
            s.pump.send_now(text, len(text))
        assert server.texts == ["a", "bb", "ccc"]  # sent before the loop ran anything else
        assert s.pump.writer is None and s.pump.unsent == 0

    asyncio.run(run())


def test_a_held_send_holds_the_later_replies_which_follow_in_order():
    async def run():
        server = Server()
        s = session(server)
        server.reading.clear()
        for text in ("a", "bb", "ccc"):
            s.pump.send_now(text, len(text))
        assert server.texts == [] and s.pump.writer is not None and s.pump.unsent == 6
        server.reading.set()
        await s.pump.writer
        assert server.texts == ["a", "bb", "ccc"] and s.pump.unsent == 0 and s.pump.writer is None
        s.pump.send_now("d", 1)
        assert server.texts[-1] == "d"
        assert not server.closed.done()

    asyncio.run(run())


def test_a_send_held_too_long_closes_the_session(settings):
    settings.BATON_SESSION_SEND_TIMEOUT_S = 0.05

    async def run():
        server = Server()
        s = session(server)
        server.reading.clear()
        s.pump.send_now("a", 1)
        s.pump.send_now("b", 1)
        assert await asyncio.wait_for(server.closed, 30) == 1008
        assert s.pump.closing and server.texts == []

    asyncio.run(run())


def test_unsent_replies_over_the_buffer_close_the_session(settings):
    settings.BATON_SESSION_SEND_BUFFER = 10

    async def run():
        server = Server()
        s = session(server)
        server.reading.clear()
        s.pump.send_now("x" * 6, 6)
        s.pump.send_now("y" * 6, 6)
        assert await asyncio.wait_for(server.closed, 30) == 1008
        assert s.pump.closing

    asyncio.run(run())


async def _until(done) -> None:
    """Let the loop run its callbacks until ``done()`` (within 5 s)."""

    async def turns() -> None:
        while not done():
            await asyncio.sleep(0)  # one turn of the loop: the callbacks it was handed run

    await asyncio.wait_for(turns(), 5)


def test_what_is_sent_while_held_waits_for_every_release_then_follows_in_order():
    """A durable commit's replies wait for its sync (``Pump.held``: STOMP's frames,
    transactions.durability.durability_deferred): what was sent before goes at once, what is
    sent after waits until every hold handed out is released (from any thread), in order."""

    async def run():
        server = Server()
        s = session(server)
        s.pump.send_now("a", 1)
        first = s.pump.held()
        s.pump.send_now("b", 1)
        second = s.pump.held()
        s.pump.send_now("c", 1)
        assert server.texts == ["a"] and s.pump.unsent == 2
        first(None)
        await _until(lambda: s.pump.writer is None)
        assert server.texts == ["a"]  # the second still holds
        await asyncio.to_thread(second, None)  # as the syncer thread releases it
        await _until(lambda: server.texts == ["a", "b", "c"])
        assert s.pump.unsent == 0 and s.pump.holds == 0
        s.pump.send_now("d", 1)
        assert server.texts[-1] == "d"

    asyncio.run(run())


def test_a_failed_sync_closes_the_connection_without_its_held_replies():
    async def run():
        server = Server()
        s = session(server)
        release = s.pump.held()
        s.pump.send_now("committed", 9)
        await asyncio.to_thread(release, OSError(5, "Input/output error"))
        await _until(lambda: s.pump.closing)
        assert "committed" not in server.texts

    asyncio.run(run())

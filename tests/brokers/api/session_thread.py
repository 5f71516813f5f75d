"""A session's requests applied by its pump (brokers/api/session.py, ``_Applier``, on
brokers/api/pump.py) on their own: its frames are all in its inbox before it starts, so what
waits there together is known; its replies are collected."""

from __future__ import annotations

import asyncio
import json
import threading

from brokers.api.pump import Pool, Pump
from brokers.api.session import _Applier, _Frames


class Consumer:
    """What the session's applier needs of its consumer: the user and somewhere to reply
    (and, as the pump's link, nowhere to write: the replies are collected here)."""

    def __init__(self, user) -> None:
        self.user = user
        self.replies: list[dict] = []
        self.replied = threading.Event()

    def reply(self, body: dict, *, hold: bool = False) -> None:
        self.replies.append(body)
        self.replied.set()

    def flush(self) -> None:
        pass


def session_thread_run(user, frames: list) -> Consumer:
    """Apply ``frames`` as a session authenticated as ``user`` (None: not yet) would
    (objects, text sent as it is, or ``_Frames``: an array frame of ``baton.batch.v2``)
    until it has applied them all; its consumer, with the replies (a request handed to a
    waiter thread answers later: ``Consumer.replied``)."""
    consumer = Consumer(user)

    async def run() -> Pump:
        applier = _Applier(consumer)
        pump = applier.pump = Pump(
            applier, consumer, pool=Pool("session-test", lambda: 1), max_pending=10_000, send_buffer=1, send_timeout_s=1
        )
        for frame in frames:
            pump.inbox.put(frame if isinstance(frame, (str, _Frames)) else json.dumps(frame))
        pump.pending = len(frames)
        pump.ended()
        assert await asyncio.to_thread(applier.finished.wait, 60)
        return pump

    pump = asyncio.run(run())
    assert pump.pending == 0
    return consumer

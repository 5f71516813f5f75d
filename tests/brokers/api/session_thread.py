"""A session's thread (brokers/api/session.py, ``_Applier``) run on its own: its frames are
all in its queue before it starts, so what waits there together is known; its replies are
collected."""

from __future__ import annotations

import json
import threading

from brokers.api.session import _Applier, _Frames


class Consumer:
    """What the session's thread needs of its consumer: the user and somewhere to reply."""

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
    """Run a session's thread, authenticated as ``user`` (None: not yet), on ``frames``
    (objects, text sent as it is, or ``_Frames``: an array frame of ``baton.batch.v2``) until
    it has applied them all; its consumer, with the replies (a request handed to a waiter
    thread answers later: ``Consumer.replied``)."""
    consumer = Consumer(user)
    applier = _Applier(consumer)
    for frame in frames:
        applier.inbox.put(frame if isinstance(frame, (str, _Frames)) else json.dumps(frame))
    applier.pending = len(frames)
    applier.inbox.put(None)
    applier.start()
    applier.join(timeout=60)
    assert not applier.is_alive() and applier.pending == 0
    return consumer

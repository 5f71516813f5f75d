"""Replies batched (the ``baton.batch`` subprotocol, brokers/api/session.py): the replies the
session's threads made while the event loop was busy go in one frame, a JSON array, in the
order made, in frames of at most about a megabyte; a reply alone goes as itself; a client
that did not ask gets one reply a frame."""

from __future__ import annotations

import json
import pytest

from brokers.api import session as session_module
from brokers.api.session import SessionConsumer, reply_text

pytestmark = pytest.mark.once


def _taken(batched: bool, bodies: list[dict]) -> list[str]:
    """The frames the replies made together go in (the session as its pump's link,
    brokers/api/pump.py); each frame's size counts its replies' characters."""
    consumer = SessionConsumer()
    consumer.batched = batched
    made = [reply_text(b) for b in bodies]
    writes = consumer.writes(made)
    assert sum(size for _, size in writes) == sum(len(text) for text in made)
    return [text for text, _ in writes]


def _replies(frames: list[str]) -> list[dict]:
    out: list[dict] = []
    for frame in frames:
        decoded = json.loads(frame)
        out.extend(decoded if isinstance(decoded, list) else [decoded])
    return out


def test_replies_made_together_go_in_one_frame_in_order():
    bodies = [{"re": n, "status": 201, "msg_id": f"{n:048x}"} for n in range(5)]
    frames = _taken(True, bodies)
    assert len(frames) == 1 and isinstance(json.loads(frames[0]), list)
    assert _replies(frames) == bodies


def test_a_reply_alone_and_a_client_that_did_not_ask_get_one_reply_a_frame():
    one = [{"re": 1, "status": 200}]
    assert [json.loads(f) for f in _taken(True, one)] == one
    bodies = [{"re": n, "status": 200} for n in range(3)]
    assert [json.loads(f) for f in _taken(False, bodies)] == bodies


def test_frames_are_bounded(monkeypatch):
    monkeypatch.setattr(session_module, "_BATCH_LENGTH", 100)
    bodies = [{"re": n, "status": 201, "body": "x" * 40} for n in range(7)]
    frames = _taken(True, bodies)
    assert len(frames) > 1 and _replies(frames) == bodies
    assert all(len(f) < 100 + 80 for f in frames)

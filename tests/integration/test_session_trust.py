"""The session on the live platform: one user's waits cannot hold the shared waiter pool
(BATON_MAX_WAITS_PER_USER, 429 ``throttled`` past it) while another user's get is answered;
frames with numbers that are not finite are refused, not answered with non-JSON."""

from __future__ import annotations

import itertools
import json

import pytest

from .servers import manage
from .test_session import Session, session  # noqa: F401  (the fixture)

pytestmark = [pytest.mark.integration, pytest.mark.once]  # once: its servers use SQLite in either pass

_users = itertools.count(1)
PER_USER = 16  # BATON_MAX_WAITS_PER_USER's default


def another_user_session(platform) -> Session:
    """A session of another user than the platform's (a superuser: the limit is per user
    whatever its rights)."""
    token = manage(platform.env, "api_token", f"trust{next(_users)}", "--create-user", "--superuser")
    return Session(platform, token=token.strip().splitlines()[-1])


def test_one_users_waits_are_bounded_and_another_user_is_served(platform, http, live_broker):
    assert http.post(f"/api/brokers/{live_broker}/queues/", json={"name": "EMPTY"}).status_code == 201
    alice, bob = Session(platform), another_user_session(platform)
    try:
        waits = [alice.send(op="get", broker=live_broker, queue="EMPTY", wait=2) for _ in range(PER_USER)]
        over = alice.send(op="get", broker=live_broker, queue="EMPTY", wait=2)
        reply = alice.recv()
        assert (reply["re"], reply["status"], reply["code"]) == (over, 429, "throttled"), reply
        assert reply["retry_after"] >= 1
        waiting = bob.send(op="get", broker=live_broker, queue="Q1", wait=30)
        assert http.post(f"/api/brokers/{live_broker}/queues/Q1/messages/", json={"body": "for bob"}).status_code == 201
        got = bob.recv()
        assert got["re"] == waiting and got["messages"][0]["body"] == "for bob", got
        # alice's waits end empty, and give their slots back before they are answered
        assert sorted(alice.recv()["re"] for _ in waits) == sorted(waits)
    finally:
        alice.close()
        bob.close()


@pytest.mark.parametrize("id_text", ["1e400", "-1e400", "NaN", "Infinity"])
def test_a_frame_with_a_number_that_is_not_finite_is_refused(session, http, live_broker, id_text):  # noqa: F811  (the fixture)
    session.ws.send(f'{{"id": {id_text}, "op": "put", "broker": "{live_broker}", "queue": "Q1", "body": "x"}}')
    text = session.ws.recv(timeout=30)
    reply = json.loads(text, parse_constant=lambda name: pytest.fail(f"{name} in a reply: {text}"))
    assert (reply["re"], reply["status"], reply["code"]) == (None, 400, "invalid"), reply
    assert http.get(f"/api/brokers/{live_broker}/queues/Q1/").json()["depth"] == 0

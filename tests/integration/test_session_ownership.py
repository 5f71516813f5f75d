"""Ownership of units of work over the session (/api/session/), with two users: the unit of
work belongs to who began it, another user with the same grants meets 404 ``not_found`` for
every operation on it, over REST and the session alike, and nothing changes."""

from __future__ import annotations

import itertools

import pytest

from .servers import users_granted
from .test_session import Session

pytestmark = [pytest.mark.integration, pytest.mark.once]  # once: its servers use SQLite in either pass

_users = itertools.count(1)


def user_sessions(platform, broker: str, count: int) -> list[Session]:
    """Sessions of ``count`` new users, each with a token by ``manage.py api_token`` and put,
    get and browse granted by ``manage.py grant`` (the commands in one process: one start of
    Python and Django instead of two a user)."""
    names = [f"sess{next(_users)}" for _ in range(count)]
    return [Session(platform, token=token) for token in users_granted(platform.env, names, broker=broker)]


def test_another_users_session_cannot_act_on_a_unit_of_work(platform, http, live_broker):
    alice, bob = user_sessions(platform, live_broker, 2)
    try:
        begun = alice.call(op="begin", broker=live_broker)
        assert begun["status"] == 201, begun
        txn = begun["id"]
        assert alice.call(op="put", broker=live_broker, queue="Q1", body="alice's", transaction=txn)["status"] == 201
        for request in (
            {"op": "transaction", "transaction": txn},
            {"op": "commit", "transaction": txn},
            {"op": "rollback", "transaction": txn},
            {"op": "check", "transaction": txn},
            {"op": "put", "broker": live_broker, "queue": "Q1", "body": "bob's", "transaction": txn},
            {"op": "get", "broker": live_broker, "queue": "Q1", "transaction": txn, "preemptive": True},
        ):
            reply = bob.call(**request)
            assert (reply["status"], reply["code"]) == (404, "not_found"), (request, reply)
        queue = http.get(f"/api/brokers/{live_broker}/queues/Q1/").json()
        assert (queue["uncommitted_puts"], queue["in_flight"]) == (1, 0)
        assert alice.call(op="commit", transaction=txn)["status"] == 200
        assert http.get(f"/api/brokers/{live_broker}/queues/Q1/").json()["depth"] == 1
    finally:
        alice.close()
        bob.close()

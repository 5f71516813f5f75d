"""Ownership of units of work through the Python client against a live platform: two users
with the same grants, each with a token made by ``manage.py api_token``; the one who did not
begin a unit of work meets NotFound for everything done to it, and it is left as it was."""

from __future__ import annotations

import itertools

import pytest

from baton_client import Client, NotFound, Transaction
from tests.integration.servers import users_granted

pytestmark = pytest.mark.once  # once: its servers use SQLite in either pass

_users = itertools.count(1)


@pytest.fixture
def two_users(platform, broker):
    """Clients for two users, each with put, get and browse on ``broker``."""
    tokens = users_granted(platform.env, [f"owner{next(_users)}" for _ in range(2)], broker=broker)
    clients = [Client(platform.url, token, timeout=30) for token in tokens]
    yield clients
    for c in clients:
        c.close()


def _settled(put):
    """A put under a unit of work over a session answers later (PendingPut): its outcome."""
    return put.result(30) if hasattr(put, "result") else put


def test_another_user_meets_not_found_and_changes_nothing(two_users, broker, client):
    alice, bob = two_users
    txn = alice.transaction(broker)
    txn.put("Q1", "alice's")
    stolen = Transaction(bob, {"id": txn.id, "broker": broker})  # bob knows the id (say, from the graph)
    attempts = {
        "refresh": stolen.refresh,
        "commit": stolen.commit,
        "rollback": stolen.rollback,
        "check": stolen.check,
        "put": lambda: _settled(stolen.put("Q1", "bob's")),
        "get": lambda: stolen.get("Q1", preemptive=True),
        "display": lambda: bob.display_transaction(txn.id),
    }
    for attempt in attempts.values():
        with pytest.raises(NotFound):
            attempt()
    assert client.display_queue(broker, "Q1")["uncommitted_puts"] == 1
    assert txn.refresh().state == "active"
    graph = {n["id"]: n for n in bob.transaction_graph(broker)["nodes"]}
    assert graph[txn.id]["yours"] is False
    assert txn.commit().committed
    assert client.display_queue(broker, "Q1")["depth"] == 1


def test_the_owner_and_a_superuser_may_act(two_users, broker, client):
    alice, _ = two_users
    with alice.transaction(broker) as txn:
        txn.put("Q1", "one")
    assert txn.state == "committed"
    other = alice.transaction(broker)
    Transaction(client, {"id": other.id, "broker": broker}).rollback()  # the platform's superuser
    assert other.refresh().state == "rolled_back"

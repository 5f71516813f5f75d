"""Connections belong to the user who opened them, as units of work do (docs/permissions.md,
"Connections"): anyone else (but a superuser or the broker's admin) gets 404 for displaying,
closing or naming one in a put or get; a client name's session is per user; connection ids
cannot be guessed from the ids a user has seen."""

from __future__ import annotations

import pytest

from brokers.models import Connection
from brokers.services.access import revoke_actions

pytestmark = pytest.mark.django_db

OPEN = "/api/brokers/QM1/connections/"
PUT = "/api/brokers/QM1/queues/Q1/messages/"
GET = "/api/brokers/QM1/queues/Q1/get/"


def status(response, expected: int, code: str | None = None) -> dict:
    assert response.status_code == expected, (response.status_code, response.content[:400])
    body = response.json() if response.content else {}
    if code:
        assert body["code"] == code, body
    return body


@pytest.fixture
def users(two_brokers, as_user):
    alice = as_user("alice", ("QM1", "Q1", "put,get,browse"))
    bob = as_user("bob", ("QM1", "Q1", "put,get,browse"))
    return alice, bob


def opened(client, name: str = "app1") -> dict:
    return status(client.post(OPEN, {"client_name": name}, format="json"), 201)


def test_another_user_cannot_display_use_or_close_a_connection(users):
    alice, bob = users
    conn = opened(alice)["conn_id"]
    put_id = status(alice.post(PUT, {"body": "mine", "connection": conn}, format="json"), 201)["msg_id"]
    unknown = status(bob.get(f"/api/connections/{'ab' * 24}/"), 404, "not_found")
    refused = status(bob.get(f"/api/connections/{conn}/"), 404, "not_found")
    assert refused["message"].replace(conn, "ID") == unknown["message"].replace("ab" * 24, "ID")
    status(bob.post(PUT, {"body": "forged", "connection": conn}, format="json"), 404, "not_found")
    status(bob.post(GET, {"connection": conn}, format="json"), 404, "not_found")
    status(bob.delete(f"/api/connections/{conn}/"), 404, "not_found")
    # nothing changed: alice's connection is open and remembers her put
    assert Connection.objects.get(pk=conn).closed_at is None
    shown = status(alice.get(f"/api/connections/{conn}/"), 200)
    assert shown["last_put_msg_id"] == put_id
    assert status(alice.get("/api/brokers/QM1/queues/Q1/"), 200)["depth"] == 1
    status(alice.delete(f"/api/connections/{conn}/"), 204)


def test_a_client_name_is_a_session_per_user(users):
    alice, bob = users
    conn = opened(alice)["conn_id"]
    put_id = status(alice.post(PUT, {"body": "mine", "connection": conn}, format="json"), 201)["msg_id"]
    theirs = opened(bob)
    assert (theirs["last_put_msg_id"], theirs["last_got_msg_id"]) == (None, None)
    bob_put = status(bob.post(PUT, {"body": "his", "connection": theirs["conn_id"]}, format="json"), 201)["msg_id"]
    assert opened(alice)["last_put_msg_id"] == put_id
    assert opened(bob)["last_put_msg_id"] == bob_put


def test_a_superuser_and_the_brokers_admin_may_act_on_any_connection(users, api, as_user):
    alice, _ = users
    conn = opened(alice)["conn_id"]
    ops = as_user("ops", ("QM1", "", "admin"))
    assert status(ops.get(f"/api/connections/{conn}/"), 200)["client_name"] == "app1"
    assert status(api.get(f"/api/connections/{conn}/"), 200)["conn_id"] == conn
    status(ops.delete(f"/api/connections/{conn}/"), 204)


def test_a_revoked_owner_is_refused(users):
    alice, _ = users
    conn = opened(alice)["conn_id"]
    revoke_actions(username="alice", broker="QM1", queue="Q1", actions="put,get")
    status(alice.get(f"/api/connections/{conn}/"), 403, "permission_denied")


def test_connection_ids_cannot_be_derived_from_other_ids(users):
    alice, bob = users
    mine = [opened(alice, f"c{i}")["conn_id"] for i in range(3)]
    msg_id = status(alice.post(PUT, {"body": "x"}, format="json"), 201)["msg_id"]
    theirs = opened(bob)["conn_id"]
    # after the clock's 8 bytes, nothing is shared with a message id or another connection id
    tails = {value[16:32] for value in [*mine, theirs, msg_id]} | {value[32:] for value in [*mine, theirs, msg_id]}
    assert len(tails) == 10, tails

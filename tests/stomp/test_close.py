"""Closing a STOMP connection from outside its serving process (the console, or REST's
``DELETE /api/stomp-connections/{session}/``): the row is marked, the process's registry
sends the client an ERROR "Closed by an operator." and drops it; its transaction is rolled
back as when a client leaves. Who may: its own user, a superuser, the broker's admin;
anyone else is told it does not exist."""

from __future__ import annotations

from django.test import Client

from brokers.models import Message
from brokers.services.access import api_token_issue, grant_actions
from stomp_server.models import StompClient
from stomp_server.protocol import LIVE
from stomp_server.registry import registry_closes_applied, registry_written

from .conftest import connected, until


def _delete(token: str, session: str):
    return Client().delete(f"/api/stomp-connections/{session}/", HTTP_AUTHORIZATION=f"Token {token}")


def test_an_operator_closes_a_stomp_connection(stomp_port, stomp_broker, token):
    before = set(LIVE)
    conn, seen = connected(stomp_port, token)
    conn.subscribe("/queue/Q1", id="s1", ack="client")
    conn.begin("t1")
    conn.send("/queue/Q1", "in the transaction", transaction="t1", receipt="r")
    seen.wait(lambda: "r" in seen.receipts)
    written = registry_written(LIVE, {})
    [session] = set(written) - before

    viewer = api_token_issue(username="viewer", create_user=True)
    grant_actions(username="viewer", broker="QM1", actions=["browse", "put", "get"])
    refused = _delete(viewer, session)
    assert (refused.status_code, refused.json()["code"]) == (404, "not_found")
    assert refused.json()["message"] == f"No STOMP connection {session}."  # as for an unknown one
    assert StompClient.objects.get(session=session).close_requested_at is None

    admin = api_token_issue(username="boss", create_user=True)
    grant_actions(username="boss", broker="QM1", actions=["admin"])
    answer = _delete(admin, session)
    assert answer.status_code == 202 and answer.json()["close_requested_by"] == "boss"
    assert registry_closes_applied(LIVE) == [session]
    seen.wait(lambda: seen.errors and seen.disconnected)
    [error] = seen.errors
    assert error.headers["message"] == "Closed by an operator."
    until(lambda: session not in LIVE, what="the connection to end")
    assert registry_closes_applied(LIVE) == []  # told once
    assert session not in registry_written(LIVE, written)
    assert not StompClient.objects.filter(session=session).exists()
    # its transaction was rolled back: the message sent in it is gone
    until(lambda: not Message.objects.filter(queue__name="Q1").exists(), what="the rollback")
    assert _delete(token, session).status_code == 404


def test_a_connection_already_gone_leaves_no_row(stomp_port, stomp_broker, token):
    before = set(LIVE)
    conn, seen = connected(stomp_port, token)
    written = registry_written(LIVE, {})
    [session] = set(written) - before
    assert _delete(token, session).status_code == 202
    assert _delete(token, session).status_code == 202  # asking again changes nothing
    assert registry_closes_applied({}) == []  # not live in this process any more: the row goes
    assert not StompClient.objects.filter(session=session).exists()
    conn.disconnect()

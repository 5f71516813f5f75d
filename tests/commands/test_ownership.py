"""Ownership of units of work and the management commands: a command runs with the
administrator's authority and the units of work it begins belong to no user, so two API
users with put and get on the broker can neither see nor touch them (404), while a broker
admin can; and a command never joins a user's unit of work."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from brokers.models import Message
from brokers.services.access import api_token_issue, grant_actions
from transactions.models import Transaction

from .conftest import run

pytestmark = pytest.mark.django_db


def user_client(username: str, actions: str) -> APIClient:
    token = api_token_issue(username=username, create_user=True)
    grant_actions(username=username, broker="QM1", actions=actions)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    return client


def test_units_of_work_begun_by_commands_belong_to_no_user(queue):
    alice, bob = user_client("alice", "put,get,browse"), user_client("bob", "put,get,browse")
    admin = user_client("ops", "admin")
    run("put", "QM1", "Q1", "from the shell", "--syncpoint", "--count", "2")
    run("get", "QM1", "Q1")
    units = list(Transaction.objects.values_list("id", "user_id", "state"))
    assert len(units) == 2 and all(user is None and state == "committed" for _, user, state in units)
    for txn, _, _ in units:
        for client in (alice, bob):
            assert client.get(f"/api/transactions/{txn}/").status_code == 404
            response = client.post(f"/api/transactions/{txn}/rollback/", {}, format="json")
            assert response.status_code == 404 and response.json()["code"] == "not_found"
        assert admin.get(f"/api/transactions/{txn}/").json()["state"] == "committed"
        assert admin.post(f"/api/transactions/{txn}/rollback/", {}, format="json").status_code == 409


def test_a_command_leaves_a_users_unit_of_work_alone(queue):
    alice = user_client("alice", "put,get")
    txn = alice.post("/api/brokers/QM1/transactions/", {}, format="json").json()["id"]
    alice.post("/api/brokers/QM1/queues/Q1/messages/", {"body": "alice's", "transaction": txn}, format="json")
    run("put", "QM1", "Q1", "shell", "--syncpoint")
    got = run("get", "QM1", "Q1", "--batch", "5")
    assert got.lines == ["shell"]  # alice's uncommitted put is not the command's to take
    assert Transaction.objects.get(pk=txn).state == "active"
    assert Message.objects.get().put_transaction_id == txn
    assert Transaction.objects.get(pk=txn).user.username == "alice"

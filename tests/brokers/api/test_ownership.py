"""Ownership of units of work through the REST API (docs/api.md, docs/permissions.md): a unit of
work belongs to the user who began it; another user with the same grants gets 404
``not_found`` for every way of acting on it, and nothing changes; a broker admin and a
superuser may act on it. The rule lives in brokers.permissions and the services, so the
client and the management commands meet the same one (tests/client, tests/commands)."""

from __future__ import annotations

import pytest

from brokers.services.message_input import MessageInput
from brokers.services.messages import message_put
from transactions.manager import transaction_begin
from transactions.models import Transaction

pytestmark = pytest.mark.django_db

Q1 = "/api/brokers/QM1/queues/Q1"
BOTH = ("QM1", "", "put,get,browse")


def not_found(response) -> None:
    assert response.status_code == 404, (response.status_code, response.content[:300])
    assert response.json()["code"] == "not_found"


def begin(client) -> str:
    response = client.post("/api/brokers/QM1/transactions/", {}, format="json")
    assert response.status_code == 201, response.content
    return response.json()["id"]


def depth(api) -> dict:
    return api.get(f"{Q1}/").json()


@pytest.fixture
def alice(two_brokers, as_user):
    return as_user("alice", BOTH)


@pytest.fixture
def bob(two_brokers, as_user):
    return as_user("bob", BOTH)


def test_a_unit_of_work_records_who_began_it(alice):
    txn = begin(alice)
    assert Transaction.objects.get(pk=txn).user.username == "alice"
    implicit = alice.post(f"{Q1}/messages/", {"body": "x", "syncpoint": "yes"}, format="json").json()["transaction"]
    assert Transaction.objects.get(pk=implicit).user.username == "alice"


def test_another_user_cannot_display_commit_roll_back_or_check_it(alice, bob, api):
    txn = begin(alice)
    assert alice.post(f"{Q1}/messages/", {"body": "mine", "transaction": txn}, format="json").status_code == 201
    not_found(bob.get(f"/api/transactions/{txn}/"))
    for action in ("commit", "rollback", "check"):
        not_found(bob.post(f"/api/transactions/{txn}/{action}/", {}, format="json"))
    # the same answer as for an id that does not exist
    unknown = bob.get("/api/transactions/0123456789abcdef0123456789abcdef/").json()
    assert set(unknown) == set(bob.get(f"/api/transactions/{txn}/").json())
    assert Transaction.objects.get(pk=txn).state == "active" and depth(api)["uncommitted_puts"] == 1
    assert alice.post(f"/api/transactions/{txn}/commit/", {}, format="json").json()["state"] == "committed"
    assert depth(api)["depth"] == 1


def test_another_user_cannot_put_or_get_under_it(alice, bob, api):
    txn = begin(alice)
    not_found(bob.post(f"{Q1}/messages/", {"body": "intruder", "transaction": txn}, format="json"))
    not_found(bob.post(f"{Q1}/messages/", {"messages": [{"body": "a"}], "transaction": txn}, format="json"))
    assert depth(api)["uncommitted_puts"] == 0
    assert api.post(f"{Q1}/messages/", {"body": "committed"}, format="json").status_code == 201
    not_found(bob.post(f"{Q1}/get/", {"transaction": txn}, format="json"))
    not_found(bob.post(f"{Q1}/get/", {"transaction": txn, "preemptive": True}, format="json"))
    not_found(bob.post(f"{Q1}/get/", {"transaction": txn, "commit_first": True}, format="json"))
    assert Transaction.objects.get(pk=txn).state == "active"
    assert depth(api)["in_flight"] == 0
    # a resolved one stays hidden too: no 409 that would confirm it
    assert alice.post(f"/api/transactions/{txn}/rollback/", {}, format="json").status_code == 200
    not_found(bob.post(f"{Q1}/messages/", {"body": "late", "transaction": txn}, format="json"))
    not_found(bob.post(f"/api/transactions/{txn}/commit/", {}, format="json"))


def test_another_user_cannot_complete_a_lock_under_it(alice, bob, api):
    api.post(f"{Q1}/messages/", {"body": "locked"}, format="json")
    token = bob.post(f"{Q1}/get/", {"mode": "peek_lock"}, format="json").json()["messages"][0]["lock_token"]
    txn = begin(alice)
    not_found(bob.post(f"/api/locks/{token}/complete/", {"transaction": txn}, format="json"))
    assert depth(api)["locked"] == 1 and depth(api)["in_flight"] == 0
    mine = begin(bob)
    assert (
        bob.post(f"/api/locks/{token}/complete/", {"transaction": mine}, format="json").json()["outcome"]
        == "pending_commit"
    )


def test_another_user_cannot_join_a_connections_unit_of_work(alice, bob, api):
    conn = alice.post("/api/brokers/QM1/connections/", {"client_name": "app"}, format="json").json()["conn_id"]
    put = alice.post(f"{Q1}/messages/", {"body": "a", "syncpoint": "yes", "connection": conn}, format="json").json()
    txn = put["transaction"]
    not_found(bob.post(f"{Q1}/messages/", {"body": "b", "syncpoint": "yes", "connection": conn}, format="json"))
    not_found(bob.post(f"{Q1}/get/", {"syncpoint": "yes", "connection": conn}, format="json"))
    not_found(bob.post(f"{Q1}/get/", {"commit_first": True, "connection": conn}, format="json"))
    assert Transaction.objects.get(pk=txn).state == "active" and depth(api)["uncommitted_puts"] == 1
    not_found(bob.delete(f"/api/connections/{conn}/"))  # closing it would roll alice's unit of work back
    not_found(bob.get(f"/api/connections/{conn}/"))
    again = alice.post(f"{Q1}/messages/", {"body": "c", "syncpoint": "yes", "connection": conn}, format="json")
    assert again.json()["transaction"] == txn
    assert alice.post(f"/api/transactions/{txn}/commit/", {}, format="json").json()["state"] == "committed"
    not_found(bob.get(f"/api/connections/{conn}/"))  # with no unit of work left open, still alice's connection
    assert alice.get(f"/api/connections/{conn}/").status_code == 200


def test_broker_admin_and_superuser_may_act_on_it(alice, as_user, api):
    admin = as_user("ops", ("QM1", "", "admin"))
    elsewhere = as_user("ops2", ("QM2", "", "admin"))
    first, second = begin(alice), begin(alice)
    not_found(elsewhere.post(f"/api/transactions/{first}/rollback/", {}, format="json"))
    assert admin.get(f"/api/transactions/{first}/").json()["state"] == "active"
    assert admin.post(f"/api/transactions/{first}/rollback/", {}, format="json").json()["state"] == "rolled_back"
    assert api.post(f"/api/transactions/{second}/commit/", {}, format="json").json()["state"] == "committed"


def test_units_of_work_of_system_code_belong_to_no_user(alice, as_user, api):
    txn = transaction_begin(broker="QM1", timeout_ms=60_000)  # as a channel agent or a command begins one
    message_put(broker="QM1", queue="Q1", messages=[MessageInput(body=b"sys")], transaction_id=txn.id)
    assert Transaction.objects.get(pk=txn.id).user is None
    not_found(alice.post(f"/api/transactions/{txn.id}/commit/", {}, format="json"))
    not_found(alice.post(f"{Q1}/messages/", {"body": "x", "transaction": txn.id}, format="json"))
    admin = as_user("ops", ("QM1", "", "admin"))
    assert admin.post(f"/api/transactions/{txn.id}/commit/", {}, format="json").json()["state"] == "committed"


def test_the_graph_shows_the_brokers_units_of_work_but_marks_whose_they_are(alice, bob, as_user):
    theirs, mine = begin(alice), begin(bob)
    nodes = {n["id"]: n for n in bob.get("/api/brokers/QM1/transactions/graph/").json()["nodes"]}
    assert nodes[theirs]["yours"] is False and nodes[mine]["yours"] is True
    viewer = as_user("viewer", ("QM1", "", "browse"))
    nodes = viewer.get("/api/brokers/QM1/transactions/graph/").json()["nodes"]
    assert {n["id"] for n in nodes} >= {theirs, mine} and not any(n["yours"] for n in nodes)
    not_found(viewer.post(f"/api/transactions/{theirs}/rollback/", {}, format="json"))


def test_the_graph_leaves_out_linked_units_of_work_on_brokers_the_user_cannot_see(two_brokers, as_user):
    from transactions.models import Link

    carol = as_user("carol", ("QM1", "", "put,get"))
    upstream = transaction_begin(broker="QM2", timeout_ms=60_000)  # as a channel's stand-in is linked
    downstream = begin(carol)
    Link.objects.create(upstream=upstream, downstream_id=downstream, resource_ref="batch 1")
    graph = carol.get("/api/brokers/QM1/transactions/graph/").json()
    assert {n["id"] for n in graph["nodes"]} == {downstream} and graph["edges"] == []
    root = as_user("root2")
    from django.contrib.auth import get_user_model

    get_user_model().objects.filter(username="root2").update(is_superuser=True)
    graph = root.get("/api/brokers/QM1/transactions/graph/").json()
    assert {n["id"] for n in graph["nodes"]} == {downstream, upstream.id} and len(graph["edges"]) == 1

"""Permissions per broker and per queue (put, get, browse, admin) through the REST API: who
may do what, 403 bodies, list filtering, superusers. The rules: brokers/permissions.py."""

from __future__ import annotations

import pytest

from brokers.services.access import revoke_actions

pytestmark = pytest.mark.django_db

Q1 = "/api/brokers/QM1/queues/Q1"


def denied(response, *words: str) -> dict:
    """403 permission_denied whose message names every one of ``words``."""
    assert response.status_code == 403, (response.status_code, response.content[:300])
    body = response.json()
    assert body["code"] == "permission_denied", body
    for word in words:
        assert word in body["message"], (word, body["message"])
    return body


def names(response) -> list[str]:
    assert response.status_code == 200, response.content[:300]
    return [row["name"] for row in response.json()["results"]]


def put(client, path: str = Q1, **fields):
    return client.post(f"{path}/messages/", {"body": "x", **fields}, format="json")


# --- the put-only user ----------------------------------------------------------------------


def test_put_only_user_can_put_and_nothing_else(two_brokers, as_user, api):
    alice = as_user("alice", ("QM1", "Q1", "put"))
    assert put(alice).status_code == 201
    denied(alice.post(f"{Q1}/get/", {}, format="json"), "get", "'Q1'", "'QM1'")
    denied(alice.post(f"{Q1}/get/", {"mode": "peek_lock"}, format="json"), "get")
    denied(alice.post(f"{Q1}/get/", {"mode": "browse"}, format="json"), "get")
    denied(alice.get(f"{Q1}/messages/"), "browse", "'Q1'", "'QM1'")
    denied(alice.post("/api/brokers/QM1/queues/", {"name": "Q9"}, format="json"), "admin", "'QM1'")
    denied(alice.patch(f"{Q1}/", {"max_depth": 10}, format="json"), "admin", "'Q1'")
    denied(alice.delete(f"{Q1}/?purge=true"), "admin", "'Q1'")
    denied(alice.patch("/api/brokers/QM1/", {"description": "mine"}, format="json"), "admin", "'QM1'")
    denied(alice.delete("/api/brokers/QM1/"), "admin")
    denied(alice.post("/api/brokers/", {"name": "QM9"}, format="json"), "superuser")
    # nothing happened
    assert api.get(f"{Q1}/").json()["depth"] == 1
    assert api.get(f"{Q1}/").json()["max_depth"] == 5000
    assert api.get("/api/brokers/QM9/").status_code == 404


def test_put_only_user_can_display_what_it_may_put_to(two_brokers, as_user):
    alice = as_user("alice", ("QM1", "Q1", "put"))
    assert alice.get(f"{Q1}/").json()["name"] == "Q1"
    assert alice.get("/api/brokers/QM1/").json()["name"] == "QM1"
    denied(alice.get("/api/brokers/QM1/queues/Q2/"), "'Q2'")
    denied(alice.get("/api/brokers/QM2/"), "'QM2'")
    denied(alice.get("/api/brokers/QM2/queues/Q1/"), "'QM2'")


def test_403_body_names_action_and_object(two_brokers, as_user):
    alice = as_user("alice", ("QM1", "Q1", "put"))
    body = denied(alice.get(f"{Q1}/messages/"))
    assert body["actions"] == ["browse"] and body["broker"] == "QM1" and body["queue"] == "Q1"
    assert body["message"] == "You may not do that: it needs browse permission on queue 'Q1' of broker 'QM1'."
    body = denied(alice.get("/api/brokers/QM1/queues/Q2/"))
    assert body["actions"] == ["put", "get", "browse", "admin"]
    assert "put, get, browse or admin" in body["message"]


def test_refused_put_stores_nothing_and_refused_get_takes_nothing(two_brokers, as_user, api):
    assert put(api).status_code == 201
    browser = as_user("bob", ("QM1", "Q1", "browse"))
    denied(put(browser), "put")
    denied(browser.post(f"{Q1}/get/", {}, format="json"), "get")
    assert [m["body"] for m in browser.get(f"{Q1}/messages/").json()["messages"]] == ["x"]
    assert api.get(f"{Q1}/").json()["depth"] == 1


def test_each_action_alone(two_brokers, as_user, api):
    put(api)
    getter = as_user("getter", ("QM1", "Q1", "get"))
    browser = as_user("browser", ("QM1", "Q1", "browse"))
    admin = as_user("admin1", ("QM1", "Q1", "admin"))
    assert getter.post(f"{Q1}/get/", {}, format="json").status_code == 200
    denied(put(getter), "put")
    denied(getter.get(f"{Q1}/messages/"), "browse")
    assert browser.get(f"{Q1}/messages/").status_code == 200
    denied(put(browser), "put")
    assert admin.patch(f"{Q1}/", {"max_depth": 10}, format="json").json()["max_depth"] == 10
    denied(put(admin), "put")
    denied(admin.post(f"{Q1}/get/", {}, format="json"), "get")
    denied(admin.get(f"{Q1}/messages/"), "browse")


# --- queue-level and broker-level grants ----------------------------------------------------


def test_queue_grant_covers_only_that_queue(two_brokers, as_user):
    alice = as_user("alice", ("QM1", "Q1", "put,get"))
    assert put(alice).status_code == 201
    denied(put(alice, "/api/brokers/QM1/queues/Q2"), "put", "'Q2'")
    denied(put(alice, "/api/brokers/QM2/queues/Q1"), "put", "'QM2'")


def test_broker_grant_covers_every_queue_of_the_broker(two_brokers, as_user):
    alice = as_user("alice", ("QM1", "", "put,get,browse"))
    for queue in ("Q1", "Q2", "SYSTEM.DEAD.LETTER.QUEUE"):
        assert put(alice, f"/api/brokers/QM1/queues/{queue}").status_code == 201
        assert alice.post(f"/api/brokers/QM1/queues/{queue}/get/", {}, format="json").json()["messages"]
    denied(put(alice, "/api/brokers/QM2/queues/Q1"), "put", "'QM2'")
    # a broker-wide grant is not admin: the definitions stay as they are
    denied(alice.post("/api/brokers/QM1/queues/", {"name": "Q3"}, format="json"), "admin")


def test_queue_and_broker_grants_add_up(two_brokers, as_user):
    alice = as_user("alice", ("QM1", "", "put"), ("QM1", "Q2", "get"))
    assert put(alice, "/api/brokers/QM1/queues/Q2").status_code == 201
    assert alice.post("/api/brokers/QM1/queues/Q2/get/", {}, format="json").json()["messages"]
    assert put(alice).status_code == 201
    denied(alice.post(f"{Q1}/get/", {}, format="json"), "get", "'Q1'")


def test_queue_admin_can_alter_and_delete_its_queue_but_not_define_queues(two_brokers, as_user):
    alice = as_user("alice", ("QM1", "Q2", "admin"))
    assert alice.patch("/api/brokers/QM1/queues/Q2/", {"description": "mine"}, format="json").status_code == 200
    denied(alice.post("/api/brokers/QM1/queues/", {"name": "Q3"}, format="json"), "admin", "'QM1' as a whole")
    denied(alice.patch("/api/brokers/QM1/", {"description": "mine"}, format="json"), "admin")
    denied(alice.patch(f"{Q1}/", {"description": "mine"}, format="json"), "admin", "'Q1'")
    assert alice.delete("/api/brokers/QM1/queues/Q2/").status_code == 204


def test_broker_admin_administers_the_broker_but_may_not_define_brokers(two_brokers, as_user):
    alice = as_user("alice", ("QM1", "", "admin"))
    assert alice.post("/api/brokers/QM1/queues/", {"name": "Q3"}, format="json").status_code == 201
    assert alice.patch("/api/brokers/QM1/queues/Q3/", {"max_depth": 7}, format="json").status_code == 200
    assert alice.delete("/api/brokers/QM1/queues/Q3/").status_code == 204
    assert alice.patch("/api/brokers/QM1/", {"description": "mine"}, format="json").json()["description"] == "mine"
    denied(alice.post("/api/brokers/", {"name": "QM3"}, format="json"), "superuser")
    denied(alice.patch("/api/brokers/QM2/", {"description": "mine"}, format="json"), "admin", "'QM2'")
    denied(put(alice), "put")  # admin is not put
    assert alice.delete("/api/brokers/QM1/").status_code == 204


def test_revoked_grant_no_longer_allows(two_brokers, as_user):
    alice = as_user("alice", ("QM1", "Q1", "put,get"))
    assert put(alice).status_code == 201
    revoke_actions(username="alice", broker="QM1", queue="Q1", actions="put")
    denied(put(alice), "put")
    assert alice.post(f"{Q1}/get/", {}, format="json").status_code == 200


# --- lists show what the caller may see -----------------------------------------------------


def test_broker_list_shows_brokers_with_any_grant(two_brokers, as_user, api):
    assert names(as_user("nobody").get("/api/brokers/")) == []
    assert names(as_user("alice", ("QM2", "Q1", "browse")).get("/api/brokers/")) == ["QM2"]
    assert names(as_user("bob", ("QM1", "", "admin"), ("QM2", "Q1", "put")).get("/api/brokers/")) == ["QM1", "QM2"]
    assert names(api.get("/api/brokers/")) == ["QM1", "QM2"]
    assert as_user("nobody").get("/api/brokers/").json()["count"] == 0


def test_queue_list_shows_queues_with_a_grant_on_them_or_the_broker(two_brokers, as_user, api):
    alice = as_user("alice", ("QM1", "Q2", "get"))
    assert names(alice.get("/api/brokers/QM1/queues/")) == ["Q2"]
    assert alice.get("/api/brokers/QM1/queues/").json()["count"] == 1
    bob = as_user("bob", ("QM1", "", "browse"))
    everything = ["Q1", "Q2", "SYSTEM.DEAD.LETTER.QUEUE"]
    assert names(bob.get("/api/brokers/QM1/queues/")) == everything
    assert names(api.get("/api/brokers/QM1/queues/")) == everything
    denied(alice.get("/api/brokers/QM2/queues/"), "'QM2'")
    denied(as_user("nobody").get("/api/brokers/QM1/queues/"), "'QM1'")


def test_grant_on_a_queue_not_yet_defined_shows_it_once_defined(two_brokers, as_user, api):
    alice = as_user("alice", ("QM1", "LATER", "put"))
    assert names(alice.get("/api/brokers/QM1/queues/")) == []
    assert api.post("/api/brokers/QM1/queues/", {"name": "LATER"}, format="json").status_code == 201
    assert names(alice.get("/api/brokers/QM1/queues/")) == ["LATER"]
    assert put(alice, "/api/brokers/QM1/queues/LATER").status_code == 201


def test_no_grant_gets_403_not_404_for_missing_objects(two_brokers, as_user, api):
    """Without a grant the caller learns nothing, not even whether the object exists; with
    one (or as superuser) a missing object is 404."""
    nobody = as_user("nobody")
    denied(nobody.get("/api/brokers/NOPE/"), "'NOPE'")
    denied(nobody.get("/api/brokers/QM1/queues/NOPE/"))
    denied(nobody.get("/api/brokers/NOPE/queues/"), "'NOPE'")
    denied(nobody.post("/api/brokers/NOPE/transactions/", {}, format="json"), "'NOPE'")
    denied(nobody.post("/api/brokers/NOPE/queues/Q/messages/", {"body": "x"}, format="json"), "'NOPE'")
    assert api.get("/api/brokers/NOPE/").status_code == 404
    alice = as_user("alice", ("QM1", "", "put"))
    assert alice.get("/api/brokers/QM1/queues/NOPE/").json()["code"] == "not_found"
    assert put(alice, "/api/brokers/QM1/queues/NOPE").status_code == 404


# --- superusers -----------------------------------------------------------------------------


def test_superuser_may_do_everything(two_brokers, api):
    assert api.post("/api/brokers/", {"name": "QM3"}, format="json").status_code == 201
    assert api.post("/api/brokers/QM3/queues/", {"name": "Q"}, format="json").status_code == 201
    assert put(api, "/api/brokers/QM3/queues/Q").status_code == 201
    assert api.get("/api/brokers/QM3/queues/Q/messages/").json()["messages"]
    assert api.post("/api/brokers/QM3/queues/Q/get/", {}, format="json").json()["messages"]
    txn = api.post("/api/brokers/QM3/transactions/", {}, format="json").json()["id"]
    assert api.post(f"/api/transactions/{txn}/commit/", {}, format="json").status_code == 200
    conn = api.post("/api/brokers/QM3/connections/", {"client_name": "c"}, format="json").json()["conn_id"]
    assert api.get(f"/api/connections/{conn}/").status_code == 200
    assert api.get("/api/brokers/QM3/transactions/graph/").status_code == 200
    assert api.patch("/api/brokers/QM3/", {"description": "d"}, format="json").status_code == 200
    assert api.delete("/api/brokers/QM3/?purge=true").status_code == 204


# --- transactions, connections, locks -------------------------------------------------------


def test_transactions_need_put_get_or_admin_on_the_broker_and_their_owner(two_brokers, as_user, api):
    producer = as_user("producer", ("QM1", "Q1", "put"))  # a queue grant is enough to begin on its broker
    txn = producer.post("/api/brokers/QM1/transactions/", {}, format="json")
    assert txn.status_code == 201, txn.content
    txn = txn.json()["id"]
    assert put(producer, transaction=txn).status_code == 201
    assert producer.get(f"/api/transactions/{txn}/").json()["state"] == "active"
    assert producer.post(f"/api/transactions/{txn}/check/", {}, format="json").json()["result"] == "ready"
    assert producer.get("/api/brokers/QM1/transactions/graph/").status_code == 200

    browser = as_user("browser", ("QM1", "", "browse"))
    denied(browser.post("/api/brokers/QM1/transactions/", {}, format="json"), "put, get or admin", "'QM1'")
    # another's unit of work is not confirmed to exist (docs/permissions.md, ownership)
    for response in (
        browser.get(f"/api/transactions/{txn}/"),
        browser.post(f"/api/transactions/{txn}/commit/", {}, format="json"),
        browser.post(f"/api/transactions/{txn}/rollback/", {}, format="json"),
        browser.post(f"/api/transactions/{txn}/check/", {}, format="json"),
    ):
        assert response.status_code == 404 and response.json()["code"] == "not_found", response.content
    assert browser.get("/api/brokers/QM1/transactions/graph/").status_code == 200  # browse shows the graph
    denied(as_user("stranger").get("/api/brokers/QM1/transactions/graph/"), "'QM1'")
    other = as_user("other", ("QM2", "", "put,get,admin"))
    assert other.post(f"/api/transactions/{txn}/rollback/", {}, format="json").status_code == 404

    assert producer.post(f"/api/transactions/{txn}/commit/", {}, format="json").json()["state"] == "committed"
    assert api.get(f"{Q1}/").json()["depth"] == 1
    admin = as_user("admin1", ("QM1", "", "admin"))
    txn2 = admin.post("/api/brokers/QM1/transactions/", {}, format="json").json()["id"]
    assert admin.post(f"/api/transactions/{txn2}/rollback/", {}, format="json").json()["state"] == "rolled_back"


def test_unknown_transaction_is_404_for_a_user_too(two_brokers, as_user):
    alice = as_user("alice", ("QM1", "Q1", "put"))
    assert alice.get("/api/transactions/0123456789abcdef0123456789abcdef/").status_code == 404


def test_connections_need_put_or_get_on_the_broker(two_brokers, as_user):
    getter = as_user("getter", ("QM1", "Q2", "get"))
    opened = getter.post("/api/brokers/QM1/connections/", {"client_name": "app"}, format="json")
    assert opened.status_code == 201, opened.content
    conn = opened.json()["conn_id"]
    assert getter.get(f"/api/connections/{conn}/").json()["client_name"] == "app"

    admin = as_user("admin1", ("QM1", "", "admin,browse"))
    denied(admin.post("/api/brokers/QM1/connections/", {"client_name": "x"}, format="json"), "put or get", "'QM1'")
    # a connection is its opener's: the broker's admin may act on it (as on a unit of work),
    # anyone else is told it does not exist (docs/permissions.md, "Ownership of units of work")
    assert admin.get(f"/api/connections/{conn}/").json()["client_name"] == "app"
    stranger = as_user("stranger", ("QM2", "", "put,get"))
    assert stranger.get(f"/api/connections/{conn}/").json()["code"] == "not_found"
    assert stranger.delete(f"/api/connections/{conn}/").json()["code"] == "not_found"
    assert getter.delete(f"/api/connections/{conn}/").status_code == 204


def test_a_put_or_get_may_name_only_a_connection_the_user_may_use(two_brokers, as_user, api):
    conn = api.post("/api/brokers/QM2/connections/", {"client_name": "theirs"}, format="json").json()["conn_id"]
    txn = put(api, "/api/brokers/QM2/queues/Q1", connection=conn, syncpoint="yes").json()["transaction"]
    alice = as_user("alice", ("QM1", "Q1", "put,get"))
    # another user's connection is answered as one that does not exist
    assert alice.post(f"{Q1}/get/", {"connection": conn, "commit_first": True}, format="json").status_code == 404
    assert put(alice, connection=conn).status_code == 404
    assert api.get(f"/api/transactions/{txn}/").json()["state"] == "active"  # not committed on QM2's behalf
    mine = alice.post("/api/brokers/QM1/connections/", {"client_name": "mine"}, format="json").json()["conn_id"]
    assert put(alice, connection=mine).status_code == 201
    assert alice.post(f"{Q1}/get/", {"connection": mine, "commit_first": True}, format="json").status_code == 200


def test_locks_need_get_on_the_locked_messages_queue(two_brokers, as_user, api):
    for _ in range(4):
        put(api)
    consumer = as_user("consumer", ("QM1", "Q1", "get"))
    tokens = [
        consumer.post(f"{Q1}/get/", {"mode": "peek_lock"}, format="json").json()["messages"][0]["lock_token"]
        for _ in range(4)
    ]
    outsider = as_user("outsider", ("QM1", "Q1", "put,browse"), ("QM1", "Q2", "get"))
    for action, body in (("complete", {}), ("abandon", None), ("renew", None), ("dead-letter", {"reason": "r"})):
        denied(outsider.post(f"/api/locks/{tokens[0]}/{action}/", body, format="json"), "get", "'Q1'")
    assert consumer.post(f"/api/locks/{tokens[0]}/renew/").status_code == 200
    assert consumer.post(f"/api/locks/{tokens[0]}/complete/", {}, format="json").json()["outcome"] == "completed"
    assert consumer.post(f"/api/locks/{tokens[1]}/abandon/").json()["outcome"] == "available"
    dead = consumer.post(f"/api/locks/{tokens[2]}/dead-letter/", {"reason": "bad"}, format="json")
    assert dead.json()["outcome"] == "dead_lettered"
    assert consumer.post("/api/locks/0000/complete/", {}, format="json").status_code == 404

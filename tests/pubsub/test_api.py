"""REST contract: docs/api.md, "Publish/subscribe"."""

from __future__ import annotations

import pytest

from tests.helpers import assert_error

pytestmark = pytest.mark.django_db

B = "/api/brokers/QM1/"


def post(api, path, body):
    return api.post(B + path, body, format="json")


def test_topic_objects_define_list_display_alter_delete(api, queues):
    r = post(api, "topics/", {"name": "PRICES", "topic_string": "prices", "conflation_interval_ms": 500})
    assert r.status_code == 201, r.content
    assert r.json()["topic_string"] == "prices" and r.json()["durable_subscriptions"] is True
    assert [t["name"] for t in api.get(B + "topics/").json()["results"]] == ["PRICES"]
    r = api.patch(B + "topics/PRICES/", {"conflation_interval_ms": 0, "description": "d"}, format="json")
    assert r.status_code == 200 and r.json()["conflation_interval_ms"] == 0 and r.json()["description"] == "d"
    assert api.get(B + "topics/PRICES/").json()["description"] == "d"
    assert_error(post(api, "topics/", {"name": "PRICES", "topic_string": "other"}), 409, "already_exists")
    assert_error(post(api, "topics/", {"name": "P2", "topic_string": "prices"}), 409, "already_exists")
    assert api.delete(B + "topics/PRICES/").status_code == 204
    assert_error(api.get(B + "topics/PRICES/"), 404, "not_found")


def test_bad_topic_input_names_the_field(api, queues):
    for body, field in [
        ({"name": "T", "topic_string": "a/#"}, "topic_string"),
        ({"name": "T", "topic_string": "a", "conflation_interval_ms": -1}, "conflation_interval_ms"),
        ({"name": "T", "topic_string": "a", "colour": "red"}, "colour"),
        ({"name": "T"}, "topic_string"),
    ]:
        assert field in assert_error(post(api, "topics/", body), 400, "invalid")["errors"], body
    assert api.get(B + "topics/").json()["count"] == 0
    post(api, "topics/", {"name": "T", "topic_string": "a"})
    assert (
        "topic_string"
        in assert_error(api.patch(B + "topics/T/", {"topic_string": "b"}, format="json"), 400, "invalid")["errors"]
    )


def test_subscribe_publish_and_read_the_copy(api, queues):
    r = post(api, "subscriptions/", {"name": "s", "topic_filter": "sport/#", "queue": "S1"})
    assert r.status_code == 201, r.content
    assert r.json()["active"] is True and r.json()["queue"] == "S1" and r.json()["activation_topic"] is None
    r = post(api, "publish/", {"topic": "sport", "body": "goal", "properties": {"k": "v"}})
    assert r.status_code == 201, r.content
    body = r.json()
    assert body["matched"] == 1 and body["retained"] is False and body["topic"] == "sport" and len(body["msg_id"]) == 48
    got = post(api, "queues/S1/get/", {}).json()["messages"][0]
    assert got["body"] == "goal"
    assert got["properties"] == {
        "k": "v",
        "topic": "sport",
        "subscription": "s",
        "is_retained": False,
        "publication": body["msg_id"],
    }
    assert api.get(B + "subscriptions/s/").json()["topic_filter"] == "sport/#"
    assert [s["name"] for s in api.get(B + "subscriptions/").json()["results"]] == ["s"]
    assert api.delete(B + "subscriptions/s/").status_code == 204
    assert_error(api.get(B + "subscriptions/s/"), 404, "not_found")
    assert_error(api.delete(B + "subscriptions/s/"), 404, "not_found")


def test_bad_subscription_input_names_the_field_and_defines_nothing(api, queues):
    for body, field in [
        ({"name": "s", "topic_filter": "a/#/b", "queue": "S1"}, "topic_filter"),
        ({"name": "s", "topic_filter": "a", "queue": "NOPE"}, "queue"),
        ({"name": "s", "topic_filter": "a", "queue": "S1", "activation_topic": "on/+"}, "activation_topic"),
        ({"name": "s", "topic_filter": "a", "queue": "S1", "durable": "perhaps"}, "durable"),
        ({"name": "s", "topic_filter": "a", "queue": "S1", "extra": 1}, "extra"),
    ]:
        assert field in assert_error(post(api, "subscriptions/", body), 400, "invalid")["errors"], body
    assert api.get(B + "subscriptions/").json()["count"] == 0


def test_publish_bad_input(api, queues):
    for body, field in [
        ({"topic": "a/+", "body": "x"}, "topic"),
        ({"topic": "a/#"}, "topic"),
        ({"body": "x"}, "topic"),
        ({"topic": "a", "priority": 12}, "priority"),
        ({"topic": "a", "bogus": 1}, "bogus"),
        ({"topic": "a", "retain": "maybe"}, "retain"),
    ]:
        assert field in assert_error(post(api, "publish/", body), 400, "invalid")["errors"], body
    assert_error(api.post("/api/brokers/NOPE/publish/", {"topic": "a"}, format="json"), 404, "not_found")
    api.patch("/api/brokers/QM1/", {"max_message_length": 3}, format="json")
    assert_error(post(api, "publish/", {"topic": "a", "body": "four", "retain": True}), 413, "message_too_large")
    assert api.get(B + "retained/").json()["count"] == 0


def test_retained_list_and_clear(api, queues):
    post(api, "publish/", {"topic": "a/b", "body": "1", "retain": True})
    post(api, "publish/", {"topic": "c", "body": "2", "retain": True})
    r = api.get(B + "retained/", {"topic_filter": "a/#"})
    assert r.status_code == 200 and [p["topic"] for p in r.json()["results"]] == ["a/b"]
    assert r.json()["results"][0]["body"] == "1"
    assert api.get(B + "retained/").json()["count"] == 2
    assert "topic_filter" in assert_error(api.get(B + "retained/", {"topic_filter": "a#"}), 400, "invalid")["errors"]
    assert api.delete(B + "retained/?topic=a/b").status_code == 204
    assert api.delete(B + "retained/?topic=a/b").status_code == 204  # also when there was none
    assert api.get(B + "retained/").json()["count"] == 1
    assert_error(api.delete(B + "retained/"), 400, "invalid")


def test_full_durable_subscriber_queue_is_409(api, queues):
    api.patch(B + "queues/S1/", {"max_depth": 0}, format="json")
    post(api, "subscriptions/", {"name": "s", "topic_filter": "t", "queue": "S1"})
    assert_error(post(api, "publish/", {"topic": "t", "body": "x"}), 409, "queue_full")


def test_publish_under_a_transaction(api, queues):
    post(api, "subscriptions/", {"name": "s", "topic_filter": "t", "queue": "S1"})
    txn = post(api, "transactions/", {}).json()["id"]
    r = post(api, "publish/", {"topic": "t", "body": "x", "transaction": txn, "retain": True})
    assert r.status_code == 201 and r.json()["transaction"] == txn and r.json()["matched"] == 1
    assert api.get(B + "retained/").json()["count"] == 0
    assert api.post(f"/api/transactions/{txn}/commit/", {}, format="json").status_code == 200
    assert api.get(B + "retained/").json()["count"] == 1
    assert len(post(api, "queues/S1/get/", {}).json()["messages"]) == 1


def test_permissions(api, queues, django_user_model):
    from brokers.services.access import api_token_issue
    from rest_framework.test import APIClient

    other = APIClient()
    other.credentials(HTTP_AUTHORIZATION="Token " + api_token_issue(username="nobody", create_user=True))
    assert_error(other.post(B + "publish/", {"topic": "t"}, format="json"), 403, "permission_denied")
    assert_error(other.get(B + "topics/"), 403, "permission_denied")
    assert_error(other.post(B + "subscriptions/", {}, format="json"), 403, "permission_denied")


def test_schema_lists_the_endpoints(api):
    schema = api.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    for path in (
        "/api/brokers/{broker}/publish/",
        "/api/brokers/{broker}/topics/",
        "/api/brokers/{broker}/subscriptions/{name}/",
        "/api/brokers/{broker}/retained/",
    ):
        assert path in schema["paths"], path

"""REST contract: brokers and queues (docs/api.md, "Brokers and queues")."""

from __future__ import annotations

import pytest

from tests.helpers import assert_error

pytestmark = pytest.mark.django_db

BROKERS = "/api/brokers/"


def queue_url(broker: str, queue: str = "") -> str:
    return f"{BROKERS}{broker}/queues/" + (f"{queue}/" if queue else "")


def broker_names(api) -> list[str]:
    response = api.get(BROKERS)
    assert response.status_code == 200
    return [b["name"] for b in response.json()["results"]]


def queue_names(api, broker: str) -> list[str]:
    response = api.get(queue_url(broker))
    assert response.status_code == 200, response.content
    return [q["name"] for q in response.json()["results"]]


def put(api, broker: str, queue: str, **fields):
    response = api.post(f"{queue_url(broker, queue)}messages/", fields or {"body": "x"}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


# --- brokers ------------------------------------------------------------------------------


def test_broker_define_then_list_and_display(api):
    response = api.post(
        BROKERS, {"name": "B1", "description": "first", "transaction_timeout_ms": 30_000}, format="json"
    )
    assert response.status_code == 201, response.content
    created = response.json()
    assert created["name"] == "B1"
    assert created["description"] == "first"
    assert created["transaction_timeout_ms"] == 30_000
    assert created["dead_letter_queue"]
    assert broker_names(api) == ["B1"]
    shown = api.get(f"{BROKERS}B1/")
    assert shown.status_code == 200
    assert shown.json()["name"] == "B1" and shown.json()["description"] == "first"


def test_broker_is_created_with_its_dead_letter_queue(api):
    created = api.post(BROKERS, {"name": "B1"}, format="json").json()
    dlq = created["dead_letter_queue"]
    assert dlq in queue_names(api, "B1")
    detail = api.get(queue_url("B1", dlq))
    assert detail.status_code == 200
    assert detail.json()["kind"] == "local" and detail.json()["depth"] == 0


def test_broker_with_named_dead_letter_queue(api):
    response = api.post(BROKERS, {"name": "B2", "dead_letter_queue": "MY.DLQ"}, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["dead_letter_queue"] == "MY.DLQ"
    assert queue_names(api, "B2") == ["MY.DLQ"]


def test_broker_list_is_sorted_by_name(api):
    for name in ("ZED", "ALPHA", "mid"):
        assert api.post(BROKERS, {"name": name}, format="json").status_code == 201
    assert broker_names(api) == sorted(["ZED", "ALPHA", "mid"])


def test_broker_already_exists_is_409(api, broker):
    body = assert_error(api.post(BROKERS, {"name": "QM1"}, format="json"), 409, "already_exists")
    assert "QM1" in body["message"]
    assert broker_names(api) == ["QM1"]


@pytest.mark.parametrize("name", ["bad name", "QM!", "", "x" * 49, "caf\u00e9"])
def test_broker_invalid_name_is_400_with_field_error(api, name):
    body = assert_error(api.post(BROKERS, {"name": name}, format="json"), 400, "invalid")
    assert "name" in body["errors"], body
    assert broker_names(api) == []


@pytest.mark.parametrize("name", [None, 7, ["B"]])
def test_broker_missing_or_non_string_name_is_400(api, name):
    payload = {} if name is None else {"name": name}
    body = assert_error(api.post(BROKERS, payload, format="json"), 400, "invalid")
    assert "name" in body["errors"]
    assert broker_names(api) == []


def test_broker_unknown_field_is_400_naming_it(api):
    body = assert_error(api.post(BROKERS, {"name": "B1", "colour": "blue"}, format="json"), 400, "invalid")
    assert "colour" in body["errors"]
    assert broker_names(api) == []


@pytest.mark.parametrize(
    "field,value",
    [
        ("transaction_timeout_ms", -1),
        ("transaction_timeout_ms", "soon"),
        ("max_message_length", -5),
        ("default_persistence", "forever"),
        ("dead_letter_queue", "not a name"),
    ],
)
def test_broker_invalid_attribute_is_400_per_field_and_nothing_created(api, field, value):
    body = assert_error(api.post(BROKERS, {"name": "B1", field: value}, format="json"), 400, "invalid")
    assert field in body["errors"], body
    assert broker_names(api) == []
    assert_error(api.get(f"{BROKERS}B1/"), 404, "not_found")


def test_broker_alter(api, broker):
    response = api.patch(f"{BROKERS}QM1/", {"description": "changed", "transaction_timeout_ms": 5000}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["description"] == "changed"
    shown = api.get(f"{BROKERS}QM1/").json()
    assert shown["description"] == "changed" and shown["transaction_timeout_ms"] == 5000


def test_broker_alter_new_dead_letter_queue_defines_it(api, broker):
    response = api.patch(f"{BROKERS}QM1/", {"dead_letter_queue": "QM1.DLQ"}, format="json")
    assert response.status_code == 200, response.content
    assert "QM1.DLQ" in queue_names(api, "QM1")


def test_broker_alter_invalid_changes_nothing(api, broker):
    before = api.get(f"{BROKERS}QM1/").json()
    body = assert_error(
        api.patch(f"{BROKERS}QM1/", {"description": "new", "transaction_timeout_ms": "x"}, format="json"),
        400,
        "invalid",
    )
    assert "transaction_timeout_ms" in body["errors"]
    assert api.get(f"{BROKERS}QM1/").json() == before


def test_broker_alter_unknown_field_and_rename_refused(api, broker):
    body = assert_error(api.patch(f"{BROKERS}QM1/", {"name": "QM9"}, format="json"), 400, "invalid")
    assert "name" in body["errors"]
    assert broker_names(api) == ["QM1"]


def test_broker_delete(api, broker):
    assert api.delete(f"{BROKERS}QM1/").status_code == 204
    assert_error(api.get(f"{BROKERS}QM1/"), 404, "not_found")
    assert broker_names(api) == []


def test_broker_delete_with_messages_refused_unless_purge(api, queue):
    put(api, "QM1", "Q1", body="keep me")
    assert_error(api.delete(f"{BROKERS}QM1/"), 409, "not_empty")
    assert broker_names(api) == ["QM1"]
    assert api.get(queue_url("QM1", "Q1")).json()["depth"] == 1
    assert api.delete(f"{BROKERS}QM1/?purge=true").status_code == 204
    assert broker_names(api) == []


def test_unknown_broker_is_404(api):
    assert_error(api.get(f"{BROKERS}NOPE/"), 404, "not_found")
    assert_error(api.patch(f"{BROKERS}NOPE/", {"description": "x"}, format="json"), 404, "not_found")
    assert_error(api.delete(f"{BROKERS}NOPE/"), 404, "not_found")
    assert_error(api.get(queue_url("NOPE")), 404, "not_found")
    assert_error(api.post(queue_url("NOPE"), {"name": "Q"}, format="json"), 404, "not_found")


# --- queues -------------------------------------------------------------------------------


def test_queue_define_with_attributes_and_display(api, broker):
    attributes = {
        "name": "ORDERS",
        "description": "orders",
        "max_depth": 10,
        "max_message_length": 1024,
        "put_enabled": True,
        "get_enabled": True,
        "default_priority": 4,
        "default_persistence": "non_persistent",
        "delivery_sequence": "fifo",
        "read_order": "commit",
        "enforce_order": "no",
        "backout_threshold": 3,
        "backout_queue": "ORDERS.BACKOUT",
        "lock_duration_ms": 5000,
        "default_access": "exclusive",
        "usage": "normal",
    }
    response = api.post(queue_url("QM1"), attributes, format="json")
    assert response.status_code == 201, response.content
    created = response.json()
    shown = api.get(queue_url("QM1", "ORDERS"))
    assert shown.status_code == 200
    for data in (created, shown.json()):
        for key, value in attributes.items():
            assert data[key] == value, (key, data[key], value)
        assert data["broker"] == "QM1"
        assert data["kind"] == "local"
        assert data["depth"] == 0 and data["uncommitted_puts"] == 0 and data["in_flight"] == 0
    assert "ORDERS" in queue_names(api, "QM1")


def test_queue_defaults_come_from_broker(api):
    api.post(
        BROKERS, {"name": "B1", "max_message_length": 2048, "default_persistence": "non_persistent"}, format="json"
    )
    created = api.post(queue_url("B1"), {"name": "Q"}, format="json").json()
    assert created["max_message_length"] == 2048
    assert created["default_persistence"] == "non_persistent"


def test_queue_with_slash_in_name(api, broker):
    assert api.post(queue_url("QM1"), {"name": "orders/eu"}, format="json").status_code == 201
    assert api.get(queue_url("QM1", "orders/eu")).json()["name"] == "orders/eu"
    put(api, "QM1", "orders/eu", body="hi")
    got = api.post(f"{queue_url('QM1', 'orders/eu')}get/", {}, format="json").json()
    assert [m["body"] for m in got["messages"]] == ["hi"]


def test_queue_already_exists_is_409(api, queue):
    assert_error(api.post(queue_url("QM1"), {"name": "Q1"}, format="json"), 409, "already_exists")


@pytest.mark.parametrize(
    "payload,field",
    [
        ({"name": "bad name"}, "name"),
        ({"name": "x" * 49}, "name"),
        ({"name": "Q", "max_depth": -1}, "max_depth"),
        ({"name": "Q", "default_priority": 10}, "default_priority"),
        ({"name": "Q", "delivery_sequence": "random"}, "delivery_sequence"),
        ({"name": "Q", "read_order": "sideways"}, "read_order"),
        ({"name": "Q", "kind": "teleport"}, "kind"),
        ({"name": "Q", "usage": "other"}, "usage"),
        ({"name": "Q", "put_enabled": "perhaps"}, "put_enabled"),
        ({"name": "Q", "lock_duration_ms": 0}, "lock_duration_ms"),
        ({"name": "Q", "colour": "blue"}, "colour"),
        ({"name": "Q", "kind": "remote"}, "remote_broker"),
        ({"name": "Q", "kind": "alias"}, "target_queue"),
    ],
)
def test_queue_invalid_definition_is_400_per_field_and_nothing_created(api, broker, payload, field):
    before = queue_names(api, "QM1")
    body = assert_error(api.post(queue_url("QM1"), payload, format="json"), 400, "invalid")
    assert field in body["errors"], body
    assert queue_names(api, "QM1") == before


def test_queue_depth_uncommitted_puts_and_in_flight(api, queue):
    put(api, "QM1", "Q1", body="a")
    put(api, "QM1", "Q1", body="b")
    txn = api.post(f"{BROKERS}QM1/transactions/", {}, format="json").json()["id"]
    put(api, "QM1", "Q1", body="c", transaction=txn)
    got = api.post(f"{queue_url('QM1', 'Q1')}get/", {"transaction": txn}, format="json").json()
    assert [m["body"] for m in got["messages"]] == ["a"]
    detail = api.get(queue_url("QM1", "Q1")).json()
    assert detail["depth"] == 2
    assert detail["uncommitted_puts"] == 1
    assert detail["in_flight"] == 1
    listed = {q["name"]: q for q in api.get(queue_url("QM1")).json()["results"]}
    assert (listed["Q1"]["depth"], listed["Q1"]["uncommitted_puts"], listed["Q1"]["in_flight"]) == (2, 1, 1)
    assert api.post(f"/api/transactions/{txn}/commit/", {}, format="json").status_code == 200
    detail = api.get(queue_url("QM1", "Q1")).json()
    assert (detail["depth"], detail["uncommitted_puts"], detail["in_flight"]) == (2, 0, 0)


def test_queue_alter(api, queue):
    response = api.patch(queue_url("QM1", "Q1"), {"max_depth": 1, "description": "tiny"}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["max_depth"] == 1
    shown = api.get(queue_url("QM1", "Q1")).json()
    assert shown["max_depth"] == 1 and shown["description"] == "tiny"
    put(api, "QM1", "Q1")
    assert_error(api.post(f"{queue_url('QM1', 'Q1')}messages/", {"body": "y"}, format="json"), 409, "queue_full")


def test_queue_alter_invalid_changes_nothing(api, queue):
    before = api.get(queue_url("QM1", "Q1")).json()
    body = assert_error(
        api.patch(queue_url("QM1", "Q1"), {"description": "new", "default_priority": 42}, format="json"), 400, "invalid"
    )
    assert "default_priority" in body["errors"]
    assert api.get(queue_url("QM1", "Q1")).json() == before


def test_queue_alter_unknown_field_is_400(api, queue):
    body = assert_error(api.patch(queue_url("QM1", "Q1"), {"depth": 5}, format="json"), 400, "invalid")
    assert "depth" in body["errors"]


def test_queue_delete_empty(api, queue):
    assert api.delete(queue_url("QM1", "Q1")).status_code == 204
    assert_error(api.get(queue_url("QM1", "Q1")), 404, "not_found")
    assert "Q1" not in queue_names(api, "QM1")


def test_queue_delete_with_messages_refused_unless_purge(api, queue):
    put(api, "QM1", "Q1")
    put(api, "QM1", "Q1")
    response = api.delete(queue_url("QM1", "Q1"))
    assert response.status_code == 409
    body = response.json()
    assert body["code"] and body["message"]
    assert api.get(queue_url("QM1", "Q1")).json()["depth"] == 2
    assert api.delete(queue_url("QM1", "Q1") + "?purge=true").status_code == 204
    assert_error(api.get(queue_url("QM1", "Q1")), 404, "not_found")


def test_queue_delete_with_uncommitted_put_refused_even_with_purge(api, queue):
    txn = api.post(f"{BROKERS}QM1/transactions/", {}, format="json").json()["id"]
    put(api, "QM1", "Q1", transaction=txn)
    assert api.delete(queue_url("QM1", "Q1") + "?purge=true").status_code == 409
    assert api.get(queue_url("QM1", "Q1")).json()["uncommitted_puts"] == 1


def test_dead_letter_queue_cannot_be_deleted(api, broker):
    dlq = api.get(f"{BROKERS}QM1/").json()["dead_letter_queue"]
    assert api.delete(queue_url("QM1", dlq)).status_code == 409
    assert dlq in queue_names(api, "QM1")


def test_unknown_queue_is_404(api, broker):
    assert_error(api.get(queue_url("QM1", "NOPE")), 404, "not_found")
    assert_error(api.patch(queue_url("QM1", "NOPE"), {"description": "x"}, format="json"), 404, "not_found")
    assert_error(api.delete(queue_url("QM1", "NOPE")), 404, "not_found")
    assert_error(api.post(f"{queue_url('QM1', 'NOPE')}messages/", {"body": "x"}, format="json"), 404, "not_found")
    assert_error(api.post(f"{queue_url('QM1', 'NOPE')}get/", {}, format="json"), 404, "not_found")


def test_purge_flag_must_be_boolean(api, queue):
    put(api, "QM1", "Q1")
    assert_error(api.delete(queue_url("QM1", "Q1") + "?purge=maybe"), 400, "invalid")
    assert api.get(queue_url("QM1", "Q1")).json()["depth"] == 1

"""Definitions as code over REST (docs/definitions.md): export, plan, apply, prune,
force, and bad documents, with every kind of object."""

from __future__ import annotations

import copy
import json

import jsonschema
import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from brokers import queries
from brokers.models import Broker, Channel, Queue
from brokers.services.access import api_token_issue
from brokers.services.messages import message_put
from pubsub.models import Subscription, Topic
from tests.conftest import msgs
from topology.document import Document
from topology.services import definitions_apply
from workflows.models import Workflow

from .conftest import TOKEN_ENV

EMPTY = {"format": "baton-definitions/1"}


def export(api, **query) -> bytes:
    response = api.get("/api/definitions/", query)
    assert response.status_code == 200, response.content
    return response.content


def plan(api, document, **options):
    response = api.post("/api/definitions/plan/", {**document, **options}, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def apply(api, document, status=200, **options):
    response = api.post("/api/definitions/apply/", {**document, **options}, format="json")
    assert response.status_code == status, response.content
    return response.json()


TESTER = {"username": "tester", "superuser": True}


def emptied() -> None:
    """Everything deleted but the API's user (as the command line would: no user applies it)."""
    definitions_apply(document=Document.model_validate({**EMPTY, "users": [TESTER]}), prune=True, force=True)


def test_export_writes_every_kind_sorted_without_secrets(platform, api):
    text = export(api)
    document = json.loads(text)
    assert text == export(api) == export(api, broker="", all="false")  # the same bytes for the same definitions
    assert document["format"] == "baton-definitions/1"
    assert [b["name"] for b in document["brokers"]] == ["QMA", "QMB"]
    assert [(q["broker"], q["name"]) for q in document["queues"]] == sorted(
        (q["broker"], q["name"]) for q in document["queues"]
    )
    kinds = {q.get("kind", "local") for q in document["queues"]}
    assert kinds == {"local", "remote", "alias"}
    assert {"broker": "QMA", "name": "QMB", "usage": "transmission"} in document["queues"]
    # non-default attributes only
    assert document["brokers"][0] == {"name": "QMA", "description": "Orders", "transaction_timeout_ms": 60000}
    assert {"broker": "QMB", "name": "ORDERS", "read_order": "commit"} in document["queues"]
    # secrets are references
    assert b"s3cret" not in text
    far = next(c for c in document["channels"] if c["name"] == "QMA.TO.FAR")
    assert far["target_token"] == {"env": TOKEN_ENV}
    assert document["topics"] == [
        {"broker": "QMA", "name": "PRICES", "conflation_interval_ms": 100, "topic_string": "prices"}
    ]
    assert document["subscriptions"][0]["durable"] is False
    (workflow,) = document["workflows"]
    assert workflow["description"] == "second version" and workflow["steps"][1]["next"] == []
    assert {"username": "alice"} in document["users"]
    assert all(set(u) <= {"username", "superuser", "active"} for u in document["users"])
    assert {"user": "alice", "broker": "QMB", "queue": "", "actions": ["browse"]} in document["grants"]


def test_export_all_writes_every_attribute_and_plans_no_change(platform, api):
    document = json.loads(export(api, all="true"))
    queue = next(q for q in document["queues"] if q["name"] == "ORDERS" and q["broker"] == "QMA")
    assert queue["max_depth"] == 100 and queue["put_enabled"] is True and queue["kind"] == "local"
    assert plan(api, document) == {"changes": [], "refused": []}


def test_the_schema_is_served_and_validates_an_export(platform, api):
    response = api.get("/api/definitions/schema/")
    assert response.status_code == 200
    schema = response.json()
    assert schema["$id"] == "baton-definitions/1"
    jsonschema.validate(json.loads(export(api)), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**EMPTY, "queues": [{"broker": "QMA", "name": "Q", "max_depht": 1}]}, schema)


def test_export_apply_on_an_empty_platform_export_gives_the_same_bytes(platform, api):
    before = export(api)
    emptied()
    lists = [k for k in Document.model_fields if k not in ("format", "broker")]
    assert json.loads(export(api)) == {**EMPTY, **{k: [] for k in lists}, "users": [TESTER]}
    outcome = apply(api, json.loads(before))
    assert {c["action"] for c in outcome["changes"]} == {"create"}
    assert export(api) == before
    assert Channel.objects.get(name="QMA.TO.FAR").target_token == "s3cret-token"  # read from the environment
    # a second apply changes nothing, not even the definitions version
    version = queries.definitions_version()
    assert apply(api, json.loads(before)) == {"changes": [], "refused": []}
    assert queries.definitions_version() == version


def test_an_apply_changes_the_definitions_version_once_for_every_change(platform, api):
    document = json.loads(export(api))
    document["queues"].append({"broker": "QMA", "name": "NEW"})
    document["brokers"][0]["description"] = "Changed"
    version = queries.definitions_version()
    outcome = apply(api, document)
    assert len(outcome["changes"]) == 2
    assert queries.definitions_version() != version


def test_plan_lists_each_change_and_changes_nothing(platform, api):
    document = json.loads(export(api))
    document["queues"].append({"broker": "QMA", "name": "NEW", "max_depth": 7})
    orders = next(q for q in document["queues"] if q["name"] == "ORDERS" and q["broker"] == "QMA")
    orders["max_depth"] = 200
    del orders["default_priority"]  # left out: back to the default
    result = plan(api, document)
    assert result["refused"] == []
    assert result["changes"] == [
        {"action": "create", "kind": "queue", "broker": "QMA", "name": "NEW", "attributes": {"max_depth": 7}},
        {"action": "alter", "kind": "queue", "broker": "QMA", "name": "ORDERS",
         "attributes": {"default_priority": 0, "max_depth": 200}},
    ]  # fmt: skip
    assert not Queue.objects.filter(name="NEW").exists()
    assert Queue.objects.get(broker__name="QMA", name="ORDERS").max_depth == 100


def test_every_kind_is_altered_in_place(platform, api):
    document = json.loads(export(api))
    document["brokers"][1]["description"] = "B"
    alias = next(q for q in document["queues"] if q["name"] == "ALIAS.ORDERS")
    alias["description"] = "alias"
    document["channels"][1]["batch_size"] = 10
    document["topics"][0]["conflation_interval_ms"] = 0
    document["workflows"][0]["deadline_ms"] = 0
    document["users"] = [u if u["username"] != "alice" else {**u, "superuser": True} for u in document["users"]]
    document["grants"][0]["actions"] = ["get", "browse"]
    result = apply(api, document)
    assert sorted((c["action"], c["kind"]) for c in result["changes"]) == sorted(
        ("alter", k) for k in ("broker", "queue", "channel", "topic", "workflow", "user", "grant")
    )
    assert json.loads(export(api)) == {**document, "topics": [{k: v for k, v in document["topics"][0].items()
                                                               if k != "conflation_interval_ms"}],
                                       "workflows": [{k: v for k, v in document["workflows"][0].items()
                                                      if k != "deadline_ms"}]}  # fmt: skip
    assert Workflow.objects.get(name="claims").version == 3  # a new version, as REST's alter makes
    assert get_user_model().objects.get(username="alice").is_superuser


def test_objects_missing_from_the_document_are_deleted_only_with_prune(platform, api):
    document = json.loads(export(api))
    document["subscriptions"] = []
    document["queues"] = [q for q in document["queues"] if q["name"] != "ALIAS.ORDERS"]
    assert plan(api, document) == {"changes": [], "refused": []}
    result = apply(api, document, prune=True)
    assert [(c["action"], c["kind"], c["name"]) for c in result["changes"]] == [
        ("delete", "subscription", "S1"),
        ("delete", "queue", "ALIAS.ORDERS"),
    ]
    assert not Subscription.objects.exists()
    assert not Queue.objects.filter(name="ALIAS.ORDERS").exists()


def test_a_queue_holding_messages_is_deleted_only_with_force(platform, api):
    message_put(broker="QMB", queue="ORDERS", messages=msgs("kept"))
    document = json.loads(export(api))
    document["queues"] = [q for q in document["queues"] if (q["broker"], q["name"]) != ("QMB", "ORDERS")]
    document["brokers"][0]["description"] = "not applied either"
    refused = apply(api, document, status=409, prune=True)
    assert refused["code"] == "definitions_conflict"
    assert refused["refused"] == [
        {"kind": "queue", "broker": "QMB", "name": "ORDERS", "code": "not_empty",
         "message": "Queue 'ORDERS' holds messages; delete with purge to discard them."}
    ]  # fmt: skip
    assert Broker.objects.get(name="QMA").description == "Orders"  # all or nothing
    assert plan(api, document, prune=True)["refused"] == refused["refused"]
    apply(api, document, prune=True, force=True)
    assert not Queue.objects.filter(broker__name="QMB", name="ORDERS").exists()


def test_an_attribute_that_cannot_change_while_the_queue_holds_messages_is_refused(platform, api):
    message_put(broker="QMB", queue="ORDERS", messages=msgs("kept"))
    document = json.loads(export(api))
    for q in document["queues"]:
        if (q["broker"], q["name"]) == ("QMB", "ORDERS"):
            del q["read_order"]
    result = plan(api, document)
    assert result["changes"] == []
    assert result["refused"][0]["code"] == "not_empty" and "read order" in result["refused"][0]["message"]
    assert apply(api, document, status=409)["refused"] == result["refused"]
    assert Queue.objects.get(broker__name="QMB", name="ORDERS").read_order == "commit"


def test_what_cannot_change_in_place_is_refused_with_its_reason(platform, api):
    document = json.loads(export(api))
    document["topics"][0]["topic_string"] = "costs"
    document["subscriptions"][0]["topic_filter"] = "costs/#"
    refused = apply(api, document, status=409)["refused"]
    assert [(r["kind"], r["code"]) for r in refused] == [("topic", "immutable"), ("subscription", "immutable")]
    assert "topic_string" in refused[0]["message"] and "prune" in refused[0]["message"]
    assert Topic.objects.get(name="PRICES").topic_string == "prices"


def test_order_comes_from_references_not_from_the_document(db, api, monkeypatch):
    monkeypatch.setenv("T", "tok")
    document = {
        **EMPTY,
        "grants": [{"user": "bob", "broker": "QM2", "queue": "R", "actions": ["put"]}],
        "users": [{"username": "bob"}],
        "channels": [{"name": "C", "source_broker": "QM1", "transmission_queue": "XQ", "target_broker": "QM2"}],
        "queues": [
            {"broker": "QM1", "name": "R", "kind": "remote", "remote_broker": "QM2", "transmission_queue": "XQ"},
            {"broker": "QM1", "name": "A", "kind": "alias", "target_queue": "R"},
            {"broker": "QM1", "name": "XQ", "usage": "transmission"},
            {"broker": "QM2", "name": "R"},
        ],
        "brokers": [{"name": "QM2"}, {"name": "QM1"}],
    }
    kinds = [c["kind"] for c in apply(api, document)["changes"]]
    assert kinds == ["broker", "broker", "queue", "queue", "queue", "queue", "channel", "user", "grant"]
    assert Channel.objects.get(name="C").transmission_queue == "XQ"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"format": "baton-definitions/9"}, "format"),
        ({"widgets": []}, "widgets"),
        ({"queues": [{"broker": "QMA", "name": "Q", "max_depht": 1}]}, "queues[0].max_depht"),
        ({"queues": [{"broker": "QMA", "name": "bad name"}]}, "queues[0].name"),
        ({"queues": [{"broker": "QMA", "name": "Q", "max_depth": -1}]}, "queues[0].max_depth"),
        ({"channels": [{"name": "C", "source_broker": "QMA", "transmission_queue": "QMB", "target_broker": "QMB",
                        "target_token": "plain"}]}, "channels[0].target_token"),
    ],
)  # fmt: skip
def test_a_document_that_is_not_valid_is_refused_naming_the_field(platform, api, change, field):
    document = {**json.loads(export(api)), **change}
    before = export(api)
    for path in ("plan", "apply"):
        response = api.post(f"/api/definitions/{path}/", document, format="json")
        assert response.status_code == 400, response.content
        body = response.json()
        assert body["code"] == "invalid" and field in body["errors"], body
    assert export(api) == before


def test_a_reference_to_an_undefined_object_is_refused_naming_the_object(platform, api):
    document = json.loads(export(api))
    document["queues"].append({"broker": "QMA", "name": "NEW"})
    document["queues"].append({"broker": "NOWHERE", "name": "Q"})
    document["subscriptions"].append({"broker": "QMA", "name": "S2", "topic_filter": "x", "queue": "MISSING"})
    response = api.post("/api/definitions/apply/", document, format="json")
    assert response.status_code == 400
    errors = response.json()["errors"]
    assert any("queues[" in name and "NOWHERE/Q" in name for name in errors), errors
    assert any("subscriptions[" in name and "S2" in name for name in errors), errors
    assert not Queue.objects.filter(name="NEW").exists()  # nothing applied


def test_a_channel_token_comes_from_the_environment(platform, api, monkeypatch):
    document = json.loads(export(api))
    monkeypatch.delenv(TOKEN_ENV)
    response = api.post("/api/definitions/plan/", document, format="json")
    assert response.status_code == 400
    assert any(name.endswith("target_token") for name in response.json()["errors"])
    monkeypatch.setenv(TOKEN_ENV, "another")
    assert plan(api, document)["changes"] == [
        {"action": "alter", "kind": "channel", "broker": "QMA", "name": "QMA.TO.FAR",
         "attributes": {"target_token": {"env": TOKEN_ENV}}}
    ]  # fmt: skip
    apply(api, document)
    assert Channel.objects.get(name="QMA.TO.FAR").target_token == "another"


def test_a_broker_export_covers_that_broker_and_its_prune_leaves_the_others(platform, api):
    document = json.loads(export(api, broker="QMB"))
    assert document["broker"] == "QMB"
    assert [b["name"] for b in document["brokers"]] == ["QMB"]
    assert {q["broker"] for q in document["queues"]} == {"QMB"}
    assert document["channels"] == [] and document["grants"] == [
        {"user": "alice", "broker": "QMB", "queue": "", "actions": ["browse"]}
    ]
    assert apply(api, document, prune=True) == {"changes": [], "refused": []}
    outside = copy.deepcopy(document)
    outside["queues"].append({"broker": "QMA", "name": "X"})
    response = api.post("/api/definitions/apply/", outside, format="json")
    assert response.status_code == 400 and "queues[2].broker" in response.json()["errors"]
    assert api.get("/api/definitions/", {"broker": "NOPE"}).status_code == 404


def test_only_a_superuser_may_export_plan_or_apply(platform):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {api_token_issue(username='alice')}")
    assert client.get("/api/definitions/").status_code == 403
    assert client.get("/api/definitions/schema/").status_code == 403
    for path in ("plan", "apply"):
        assert client.post(f"/api/definitions/{path}/", EMPTY, format="json").status_code == 403


def test_a_document_cannot_delete_the_user_applying_it(platform, api):
    document = json.loads(export(api))
    document["users"] = [u for u in document["users"] if u["username"] != "tester"]
    refused = apply(api, document, status=409, prune=True)["refused"]
    assert [(r["kind"], r["name"]) for r in refused] == [("user", "tester")]


def test_every_attribute_the_define_operations_take_is_exported(platform, api):
    """The document's models are the define operations' inputs: an attribute added there is
    exported (all=true) with no change to the definitions code."""
    from brokers.api.operations.definitions import QueueDefine
    from brokers.channels.api.operations import ChannelDefine

    document = json.loads(export(api, all="true"))
    queue = next(q for q in document["queues"] if q["name"] == "REMOTE.ORDERS")
    assert set(queue) == set(QueueDefine.Input.model_fields)
    channel = next(c for c in document["channels"] if c["name"] == "QMA.TO.FAR")
    assert set(channel) == set(ChannelDefine.Input.model_fields)


def test_a_running_channel_is_not_altered(platform, api):
    from brokers.channels.definitions import channel_start

    channel_start(name="QMA.TO.QMB", dispatch=False)
    document = json.loads(export(api))
    document["channels"][1]["batch_size"] = 5
    refused = apply(api, document, status=409)["refused"]
    assert [(r["kind"], r["name"], r["code"]) for r in refused] == [("channel", "QMA.TO.QMB", "conflict")]
    assert "Stop channel" in refused[0]["message"]

"""The channels' API defined once (brokers.channels.api): the REST answers, unknown fields
refused by name, the OpenAPI schema and the session's receiving operations from the same
definitions."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from brokers.api.operations import SESSION_OPERATIONS
from brokers.channels.api import operations as ops, receiving as rx
from tests.transfer.conftest import two_brokers

pytestmark = pytest.mark.django_db

DEFINITION = {"name": "A.B", "source_broker": "QMA", "transmission_queue": "QMB", "target_broker": "QMB"}


@pytest.fixture
def brokers(db):
    two_brokers(channel="QMA.QMB")


def test_define_display_alter_start_stop_delete(api, brokers):
    made = api.post("/api/channels/", {**DEFINITION, "window": 4, "preemptive": True}, format="json")
    assert made.status_code == 201, made.json()
    assert {k: made.json()[k] for k in ("name", "window", "preemptive", "state", "batches_in_flight")} == {
        "name": "A.B",
        "window": 4,
        "preemptive": True,
        "state": "stopped",
        "batches_in_flight": 0,
    }
    again = api.post("/api/channels/", DEFINITION, format="json")
    assert (again.status_code, again.json()["code"]) == (409, "already_exists")
    assert api.get("/api/channels/A.B/").json() == {
        **made.json(),
        "updated_at": api.get("/api/channels/A.B/").json()["updated_at"],
    }
    assert api.patch("/api/channels/A.B/", {"batch_size": 7}, format="json").json()["batch_size"] == 7
    assert api.post("/api/channels/A.B/start/").json()["enabled"] is True
    assert api.delete("/api/channels/A.B/").status_code == 409
    assert api.post("/api/channels/A.B/stop/").json()["enabled"] is False
    assert api.delete("/api/channels/A.B/").status_code == 204
    for method, path in (
        ("get", "/api/channels/A.B/"),
        ("post", "/api/channels/A.B/start/"),
        ("delete", "/api/channels/A.B/"),
    ):
        missing = getattr(api, method)(path)
        assert (missing.status_code, missing.json()["code"]) == (404, "not_found")
    listed = api.get("/api/channels/").json()
    assert listed["count"] == 1 and [c["name"] for c in listed["results"]] == ["QMA.QMB"]


def test_unknown_and_bad_fields_are_a_400_naming_them(api, brokers):
    bad = api.post("/api/channels/", {**DEFINITION, "batchsize": 10, "window": "8"}, format="json")
    assert bad.status_code == 400 and bad.json()["code"] == "invalid"
    assert set(bad.json()["errors"]) == {"batchsize", "window"}, bad.json()
    missing = api.post("/api/channels/", {"source_broker": "QMA"}, format="json").json()
    assert {"name", "transmission_queue", "target_broker"} <= set(missing["errors"])
    renamed = api.patch("/api/channels/QMA.QMB/", {"name": "X"}, format="json")
    assert renamed.status_code == 400 and set(renamed.json()["errors"]) == {"name"}, renamed.json()
    misspelt = api.patch("/api/channels/QMA.QMB/", {"windows": 2}, format="json")
    assert misspelt.json()["errors"] == {"windows": ["Unknown field."]}
    assert api.post("/api/channels/QMA.QMB/start/", {"now": True}, format="json").json()["errors"] == {
        "now": ["Unknown field."]
    }
    assert api.get("/api/channels/?page=2").json()["errors"] == {"page": ["Unknown field."]}
    receipt = api.post(
        "/api/receiver/batches/status/",
        {"channel": "C", "source_broker": "QMA", "seq": 1, "sequence": 1},
        format="json",
    )
    assert receipt.status_code == 400 and set(receipt.json()["errors"]) == {"sequence"}
    batch = api.post(
        "/api/receiver/batches/",
        {
            "channel": "C",
            "source_broker": "QMA",
            "target_broker": "QMB",
            "seq": 1,
            "messages": [{"msg_id": "x", "body_base64": ""}],
        },
        format="json",
    )
    assert batch.status_code == 400 and set(batch.json()["errors"]) == {"messages[0].put_time"}, batch.json()


def test_receiver_endpoints_answer_as_before(api, brokers):
    key = {"channel": "FAR.QMB", "source_broker": "FAR", "seq": 1}
    assert api.post("/api/receiver/batches/status/", key, format="json").json() == {"state": "unknown", "seq": 1}
    message = {
        "msg_id": "ab" * 24,
        "put_time": "2026-01-01T00:00:00+00:00",
        "body_base64": "aGk=",
        "destination": {"broker": "QMB", "queue": "IN"},
    }
    taken = api.post(
        "/api/receiver/batches/",
        {**key, "target_broker": "QMB", "provisional": True, "messages": [message]},
        format="json",
    )
    assert taken.json() == {"state": "received", "seq": 1, "dead_lettered": 0, "duplicates": 0}
    assert api.post("/api/receiver/batches/status/", key, format="json").json()["state"] == "pending"
    assert api.post("/api/receiver/batches/commit/", key, format="json").json() == {"state": "committed", "seq": 1}
    assert api.post("/api/receiver/batches/backout/", key, format="json").json()["state"] == "committed"
    assert api.get("/api/brokers/QMB/queues/IN/").json()["depth"] == 1


def test_only_superusers_operate_channels_or_deliver_batches(brokers):
    from brokers.services.access import api_token_issue, grant_actions

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {api_token_issue(username='ann', create_user=True)}")
    grant_actions(username="ann", broker="QMA", queue="", actions="admin")
    assert client.get("/api/channels/QMA.QMB/").status_code == 200
    for path, body in (
        ("/api/channels/", DEFINITION),
        ("/api/channels/QMA.QMB/stop/", {}),
        ("/api/receiver/batches/status/", {"channel": "C", "source_broker": "QMA", "seq": 1}),
    ):
        refused = client.post(path, body, format="json")
        assert (refused.status_code, refused.json()["code"]) == (403, "permission_denied"), path


@pytest.mark.parametrize(
    "path", ["/api/receiver/batches/", "/api/receiver/batches/commit/", "/api/receiver/batches/status/"]
)
@pytest.mark.parametrize("body", [{}, {"channel": 5, "seq": "x"}, {"channel": "C", "source_broker": "QMA"}])
def test_the_receiver_authorizes_before_it_validates(brokers, path, body):
    """A stranger's batch is refused whatever it holds: no 400 tells it the fields a batch needs."""
    from brokers.services.access import api_token_issue, grant_actions

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {api_token_issue(username='eve', create_user=True)}")
    grant_actions(username="eve", broker="QMB", queue="", actions="admin,put,get")
    refused = client.post(path, body, format="json")
    assert (refused.status_code, refused.json()["code"]) == (403, "permission_denied"), refused.json()
    assert "errors" not in refused.json()


def test_schema_and_session_come_from_the_same_definitions(api):
    spec = api.get("/api/schema/?format=json").json()
    schemas = spec["components"]["schemas"]
    assert set(schemas["ChannelOut"]["properties"]) == set(ops.ChannelOut.model_fields)
    assert {"batches_in_flight", "oldest_unconfirmed", "messages_per_s", "bytes_per_s", "window", "batch_bytes"} <= set(
        schemas["ChannelOut"]["required"]
    )
    assert spec["paths"]["/api/channels/"]["post"]["requestBody"]
    assert spec["paths"]["/api/channels/{channel}/"]["get"]["parameters"][0]["schema"]["pattern"]
    for path in (
        "/api/channels/",
        "/api/channels/{channel}/",
        "/api/channels/{channel}/start/",
        "/api/channels/{channel}/stop/",
        "/api/receiver/batches/",
        "/api/receiver/batches/commit/",
        "/api/receiver/batches/backout/",
        "/api/receiver/batches/status/",
    ):
        for method, operation in spec["paths"][path].items():
            for code in ("401", "403", "429"):
                assert operation["responses"][code], (method, path, code)
    # the session carries the receiving end (a channel from another platform), not channel administration
    assert {
        name: SESSION_OPERATIONS[name] for name in ("batch_receive", "batch_commit", "batch_backout", "batch_status")
    } == {
        "batch_receive": rx.BatchReceive,
        "batch_commit": rx.BatchCommit,
        "batch_backout": rx.BatchBackout,
        "batch_status": rx.BatchInquire,
    }
    assert not any(name.startswith("channel") for name in SESSION_OPERATIONS)


def test_no_session_reply_hides_its_status():
    """A session reply is ``{"re", "status", ...body}``: a body field named so would
    overwrite the HTTP status (the receiving end's answers say ``state``)."""
    for name, operation in SESSION_OPERATIONS.items():
        for model in operation.outputs().values():
            assert {"re", "status"}.isdisjoint(model.model_fields), name

"""Names as the ecosystem writes them (API.md, Conventions): a hyphen is legal in every name,
through every door: REST, the session's operation table, the administrator commands,
workflows, publish/subscribe and STOMP. A name outside the rule is 400 ``invalid`` naming
the rule."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from brokers.names import NAME_RULE, is_name
from brokers.services.access import api_token_issue
from brokers.services.messages import message_browse


@pytest.fixture
def api(db) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {api_token_issue(username='root', create_user=True, superuser=True)}")
    return client


def created(response) -> dict:
    assert response.status_code == 201, (response.status_code, response.content[:400])
    return response.json()


@pytest.mark.parametrize("name", ["ack-test", "orders-eu", "-", "a-b.c_d/e%f", "x" * 47 + "-"])
def test_the_rule_takes_hyphens(name):
    assert is_name(name)


@pytest.mark.parametrize("name", ["", "a b", "a:b", "é", "x" * 49, "a*b"])
def test_the_rule_refuses_the_rest(name):
    assert not is_name(name)


def test_rest_defines_puts_gets_and_browses_hyphenated_names(api):
    created(api.post("/api/brokers/", {"name": "qm-eu"}, format="json"))
    created(api.post("/api/brokers/qm-eu/queues/", {"name": "ack-test"}, format="json"))
    assert api.get("/api/brokers/qm-eu/queues/ack-test/").json()["name"] == "ack-test"
    created(api.post("/api/brokers/qm-eu/queues/ack-test/messages/", {"body": "hi"}, format="json"))
    assert [m["body"] for m in api.get("/api/brokers/qm-eu/queues/ack-test/messages/").json()["messages"]] == ["hi"]
    got = api.post("/api/brokers/qm-eu/queues/ack-test/get/", {}, format="json").json()
    assert [m["body"] for m in got["messages"]] == ["hi"]
    altered = api.patch("/api/brokers/qm-eu/queues/ack-test/", {"description": "d-1"}, format="json")
    assert altered.status_code == 200


def test_a_name_outside_the_rule_is_invalid_naming_the_rule(api):
    created(api.post("/api/brokers/", {"name": "qm-eu"}, format="json"))
    before = api.get("/api/brokers/qm-eu/queues/").json()
    response = api.post("/api/brokers/qm-eu/queues/", {"name": "bad name"}, format="json")
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "invalid" and NAME_RULE in str(body["errors"]["name"])
    assert api.get("/api/brokers/qm-eu/queues/").json() == before  # nothing made


def test_pubsub_topics_and_subscriptions_take_hyphens(api):
    created(api.post("/api/brokers/", {"name": "BRK1"}, format="json"))
    created(api.post("/api/brokers/BRK1/queues/", {"name": "PRICES-EUR"}, format="json"))
    created(api.post("/api/brokers/BRK1/topics/", {"name": "fx-prices", "topic_string": "prices"}, format="json"))
    sub = created(
        api.post(
            "/api/brokers/BRK1/subscriptions/",
            {"name": "eur-watch", "topic_filter": "prices/+/eur", "queue": "PRICES-EUR"},
            format="json",
        )
    )
    assert sub["name"] == "eur-watch"
    publication = {"topic": "prices/fx/eur", "body": "1.08"}
    published = created(api.post("/api/brokers/BRK1/publish/", publication, format="json"))
    assert published["matched"] == 1
    assert [bytes(m.body) for m in message_browse(broker="BRK1", queue="PRICES-EUR").messages] == [b"1.08"]
    assert api.get("/api/brokers/BRK1/subscriptions/eur-watch/").status_code == 200


def test_workflows_and_steps_take_hyphens(api):
    created(api.post("/api/brokers/", {"name": "WF-1"}, format="json"))
    for queue in ("step-a", "step-b", "undo-a", "undo-b"):
        created(api.post("/api/brokers/WF-1/queues/", {"name": queue}, format="json"))
    steps = [
        {"name": "check-claim", "queue": "step-a", "compensation_queue": "undo-a"},
        {"name": "pay-out", "queue": "step-b", "compensation_queue": "undo-b"},
    ]
    created(api.post("/api/brokers/WF-1/workflows/", {"name": "claim-flow", "steps": steps}, format="json"))
    instance = created(api.post("/api/brokers/WF-1/workflows/claim-flow/instances/", {"body": "x"}, format="json"))
    assert instance["workflow"] == "claim-flow"
    [request] = message_browse(broker="WF-1", queue="step-a").messages
    assert request.body is not None


def test_channels_take_hyphens(api):
    created(api.post("/api/brokers/", {"name": "qm-a"}, format="json"))
    created(api.post("/api/brokers/", {"name": "qm-b"}, format="json"))
    created(api.post("/api/brokers/qm-a/queues/", {"name": "to-b", "usage": "transmission"}, format="json"))
    channel = created(
        api.post(
            "/api/channels/",
            {"name": "a-to-b", "source_broker": "qm-a", "transmission_queue": "to-b", "target_broker": "qm-b"},
            format="json",
        )
    )
    assert channel["name"] == "a-to-b"
    assert api.get("/api/channels/a-to-b/").status_code == 200


def test_the_commands_take_hyphens(db):
    out = StringIO()
    call_command("define_broker", "qm-cli", stdout=out)
    call_command("define_queue", "qm-cli", "ack-test", stdout=out)
    call_command("put", "qm-cli", "ack-test", "hello", stdout=out)
    assert [bytes(m.body) for m in message_browse(broker="qm-cli", queue="ack-test").messages] == [b"hello"]

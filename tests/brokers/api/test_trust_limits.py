"""Limits that hold for every byte and answers that leak nothing: properties count towards
the message length, property count and name length are bounded, context fields need the
set-context permission, non-finite numbers are not JSON, 403s name only what the user may
see, names are refused where they would break paths, and opening a connection checks
permission before validating."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from brokers.models import Message, Queue
from brokers.services.message_input import MAX_PROPERTIES, PROPERTY_KEY_LENGTH
from brokers.services.queues import queue_define

pytestmark = pytest.mark.django_db

QM1 = "/api/brokers/QM1/queues"
Q1 = f"{QM1}/Q1"


def status(response, expected: int, code: str | None = None) -> dict:
    assert response.status_code == expected, (response.status_code, response.content[:400])
    body = response.json() if response.content else {}
    if code:
        assert body["code"] == code, body
    return body


def depth(queue: str = "Q1") -> int:
    return Message.objects.filter(queue__broker__name="QM1", queue__name=queue).count()


# --- finding 4: the message length covers properties and the descriptor ----------------------


def test_properties_count_towards_the_message_length(two_brokers, api):
    queue_define(broker="QM1", name="SMALL", max_message_length=1000)
    status(
        api.post(f"{QM1}/SMALL/messages/", {"body": "x", "properties": {"big": "y" * 2000}}, format="json"),
        413,
        "message_too_large",
    )
    status(
        api.post(
            f"{QM1}/SMALL/messages/", {"body": "x" * 900, "format": "f" * 100, "properties": {"k": "v"}}, format="json"
        ),
        413,
        "message_too_large",
    )
    status(api.post(f"{QM1}/SMALL/messages/", {"body": "x", "properties": {"small": "y" * 900}}, format="json"), 201)
    assert depth("SMALL") == 1


def test_property_count_and_name_length_are_bounded(two_brokers, api):
    many = {f"p{i}": i for i in range(MAX_PROPERTIES + 1)}
    assert (
        "properties"
        in status(api.post(f"{Q1}/messages/", {"body": "x", "properties": many}, format="json"), 400, "invalid")[
            "errors"
        ]
    )
    long_name = {"k" * (PROPERTY_KEY_LENGTH + 1): 1}
    status(api.post(f"{Q1}/messages/", {"body": "x", "properties": long_name}, format="json"), 400, "invalid")
    status(api.post(f"{Q1}/messages/", {"body": "x", "properties": {"": 1}}, format="json"), 400, "invalid")
    status(
        api.post(f"{Q1}/messages/", {"messages": [{"body": "ok"}, {"body": "x", "properties": many}]}, format="json"),
        400,
        "invalid",
    )
    assert depth() == 0
    fine = {f"p{i}": i for i in range(MAX_PROPERTIES)} | {"k" * (PROPERTY_KEY_LENGTH - 1): 1}
    fine.pop("p0")
    status(api.post(f"{Q1}/messages/", {"body": "x", "properties": fine}, format="json"), 201)


# --- finding 8: context fields need the set-context permission -------------------------------


def test_context_fields_need_the_set_context_permission(two_brokers, as_user, api):
    alice = as_user("alice", ("QM1", "", "put,get"))
    status(
        alice.post(
            f"{QM1}/SYSTEM.DEAD.LETTER.QUEUE/messages/",
            {"body": "x", "msg_type": "report", "put_application": "baton"},
            format="json",
        ),
        403,
        "permission_denied",
    )
    status(alice.post(f"{Q1}/messages/", {"body": "x", "put_application": "baton"}, format="json"), 403)
    status(alice.post(f"{Q1}/messages/", {"messages": [{"body": "x", "msg_type": "report"}]}, format="json"), 403)
    assert depth() == 0 and depth("SYSTEM.DEAD.LETTER.QUEUE") == 0
    assert status(alice.post(f"{Q1}/messages/", {"body": "x"}, format="json"), 201)["put_application"] == "alice"
    assert (
        status(alice.post(f"{Q1}/messages/", {"body": "x", "put_application": "alice"}, format="json"), 201)[
            "put_application"
        ]
        == "alice"
    )
    get_user_model().objects.get(username="alice").user_permissions.add(Permission.objects.get(codename="set_context"))
    bridge = status(
        alice.post(f"{Q1}/messages/", {"body": "x", "msg_type": "report", "put_application": "bridge"}, format="json"),
        201,
    )
    assert (bridge["msg_type"], bridge["put_application"]) == ("report", "bridge")
    status(
        api.post(f"{Q1}/messages/", {"body": "x", "msg_type": "report", "put_application": "baton"}, format="json"), 201
    )  # a superuser may


# --- finding 9: strict JSON ----------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        '{"body": "x", "properties": {"n": 1e400}}',
        '{"body": "x", "priority": NaN}',
        '{"body": "x", "properties": {"n": -Infinity}}',
    ],
)
def test_non_finite_numbers_are_refused(two_brokers, api, text):
    status(api.generic("POST", f"{Q1}/messages/", text, content_type="application/json"), 400, "invalid")
    assert depth() == 0


# --- finding 11: 403s name nothing the user may not see; names; connections ------------------


def test_a_foreign_lock_token_is_refused_without_naming_its_queue(two_brokers, as_user, api):
    status(api.post(f"{Q1}/messages/", {"body": "x"}, format="json"), 201)
    token = status(api.post(f"{Q1}/get/", {"mode": "peek_lock"}, format="json"), 200)["messages"][0]["lock_token"]
    stranger = as_user("stranger", ("QM2", "", "get"))
    body = status(stranger.post(f"/api/locks/{token}/complete/", {}, format="json"), 403, "permission_denied")
    assert "QM1" not in str(body) and "Q1" not in str(body), body


@pytest.mark.parametrize(
    "name", ["../../x", "..", ".", "a/../b", "a/./b", "/a", "a/", "a//b", "IN/put", "IN/purge", "X/topics"]
)
def test_names_that_would_break_paths_are_refused(two_brokers, api, name):
    status(api.post(f"{QM1}/", {"name": name}, format="json"), 400, "invalid")
    status(api.post("/api/brokers/", {"name": name}, format="json"), 400, "invalid")
    assert not Queue.objects.filter(name=name).exists()


def test_names_with_plain_slashed_parts_still_work(two_brokers, api):
    status(api.post(f"{QM1}/", {"name": "orders/eu..west"}, format="json"), 201)
    status(api.post(f"{QM1}/orders/eu..west/messages/", {"body": "x"}, format="json"), 201)


def test_opening_a_connection_checks_permission_before_validation(two_brokers, as_user):
    stranger = as_user("stranger", ("QM2", "", "put"))
    for body in ({}, {"client_name": ""}, {"client_name": 5}, {"client_name": "app", "extra": 1}):
        status(stranger.post("/api/brokers/QM1/connections/", body, format="json"), 403, "permission_denied")
        status(stranger.post("/api/brokers/NO.SUCH/connections/", body, format="json"), 403, "permission_denied")
    status(stranger.post("/api/brokers/QM2/connections/", {}, format="json"), 400, "invalid")

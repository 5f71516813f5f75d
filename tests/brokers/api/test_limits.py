"""Limits that refuse with 400, 413 or 429 and never a 5xx: request body size, message size,
batch, page and wait bounds, and the per-user request rate."""

from __future__ import annotations

import base64
import json

import pytest
from django.conf import settings
from django.core.cache import cache
from django.test import override_settings

from tests.helpers import assert_error as error

pytestmark = pytest.mark.django_db

Q1 = "/api/brokers/QM1/queues/Q1"


@pytest.fixture
def throttle_cache():
    cache.clear()
    yield
    cache.clear()


# --- request and message size ---------------------------------------------------------------


def test_request_body_over_the_limit_is_413_message_too_large(api, queue):
    body = json.dumps({"body": "x" * 5000})
    with override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=4096):
        response = api.post(f"{Q1}/messages/", data=body, content_type="application/json")
    details = error(response, 413, "message_too_large")
    assert details["max_request_length"] == 4096 and details["length"] == len(body)
    assert api.get(f"{Q1}/").json()["depth"] == 0


def test_batch_over_the_request_limit_is_413(api, queue):
    batch = {"messages": [{"body": "y" * 1000} for _ in range(10)]}
    with override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=8000):
        error(api.post(f"{Q1}/messages/", batch, format="json"), 413, "message_too_large")
        error(api.post(f"{Q1}/get/", {"msg_id": "a" * 9000}, format="json"), 413, "message_too_large")
    assert api.get(f"{Q1}/").json()["depth"] == 0


def test_unauthenticated_oversized_request_is_401(queue):
    from rest_framework.test import APIClient

    with override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=100):
        response = APIClient().post(f"{Q1}/messages/", {"body": "z" * 1000}, format="json")
    error(response, 401, "not_authenticated")


def test_request_limit_leaves_room_for_the_largest_message_in_base64():
    assert settings.DATA_UPLOAD_MAX_MEMORY_SIZE == settings.BATON_MAX_REQUEST_LENGTH
    assert settings.DATA_UPLOAD_MAX_MEMORY_SIZE > settings.BATON_MAX_MESSAGE_LENGTH * 4 // 3 + 64 * 1024


def test_largest_message_fits_and_one_byte_more_is_413(api, queue):
    limit = settings.BATON_MAX_MESSAGE_LENGTH
    largest = base64.b64encode(b"\x01" * limit).decode()
    response = api.post(f"{Q1}/messages/", {"body_base64": largest}, format="json")
    assert response.status_code == 201, response.content[:300]
    over = base64.b64encode(b"\x01" * (limit + 1)).decode()
    details = error(api.post(f"{Q1}/messages/", {"body_base64": over}, format="json"), 413, "message_too_large")
    assert details["max_message_length"] == limit
    assert api.get(f"{Q1}/").json()["depth"] == 1


# --- batch, page and wait bounds ------------------------------------------------------------


@override_settings(BATON_MAX_BATCH=5)
def test_batch_sizes_over_the_maximum_are_400(api, queue):
    error(api.post(f"{Q1}/messages/", {"messages": [{"body": "m"}] * 6}, format="json"), 400, "invalid")
    assert api.post(f"{Q1}/messages/", {"messages": [{"body": "m"}] * 5}, format="json").status_code == 201
    error(api.post(f"{Q1}/messages/", {"messages": []}, format="json"), 400, "invalid")
    for batch in (0, 6, -1, 2.5, "many", True):
        body = error(api.post(f"{Q1}/get/", {"batch": batch}, format="json"), 400, "invalid")
        assert "batch" in body["errors"]
    for limit in ("0", "6", "x"):
        body = error(api.get(f"{Q1}/messages/?limit={limit}"), 400, "invalid")
        assert "limit" in body["errors"]
    assert len(api.get(f"{Q1}/messages/?limit=5").json()["messages"]) == 5


@override_settings(BATON_MAX_WAIT_S=2)
def test_waits_over_the_maximum_are_400(api, queue):
    txn = api.post("/api/brokers/QM1/transactions/", {}, format="json").json()["id"]
    for wait in (3, -1, "long", [1]):
        assert "wait" in error(api.post(f"{Q1}/get/", {"wait": wait}, format="json"), 400, "invalid")["errors"]
        assert (
            "wait"
            in error(api.post(f"/api/transactions/{txn}/commit/", {"wait": wait}, format="json"), 400, "invalid")[
                "errors"
            ]
        )
        assert (
            "wait"
            in error(api.post(f"/api/transactions/{txn}/check/", {"wait": wait}, format="json"), 400, "invalid")[
                "errors"
            ]
        )


def test_page_bounds_are_400(api, queue):
    for query in ("limit=0", "limit=1001", "limit=x", "offset=-1", "offset=x"):
        error(api.get(f"/api/brokers/?{query}"), 400, "invalid")
        error(api.get(f"/api/brokers/QM1/queues/?{query}"), 400, "invalid")
    page = api.get("/api/brokers/QM1/queues/?limit=1&offset=1").json()
    assert page["count"] == 2 and [q["name"] for q in page["results"]] == ["SYSTEM.DEAD.LETTER.QUEUE"]


@pytest.mark.parametrize(
    "field,value",
    [
        ("description", None),
        ("description", {}),
        ("description", []),
        ("max_depth", "10"),
        ("max_depth", True),
        ("put_enabled", "yes"),
        ("put_enabled", None),
        ("max_depth", 2**70),
    ],
)
def test_definitions_of_the_wrong_json_type_are_400(api, queue, field, value):
    body = error(api.patch(f"{Q1}/", {field: value}, format="json"), 400, "invalid")
    assert field in body["errors"]
    error(api.post("/api/brokers/QM1/queues/", {"name": "Q2", field: value}, format="json"), 400, "invalid")
    assert api.get("/api/brokers/QM1/queues/Q2/").status_code == 404


@pytest.mark.parametrize(
    "field,value",
    [
        ("description", None),
        ("description", {}),
        ("transaction_timeout_ms", "1"),
        ("transaction_timeout_ms", False),
    ],
)
def test_broker_definitions_of_the_wrong_json_type_are_400(api, broker, field, value):
    assert field in error(api.patch("/api/brokers/QM1/", {field: value}, format="json"), 400, "invalid")["errors"]
    error(api.post("/api/brokers/", {"name": "QM2", field: value}, format="json"), 400, "invalid")
    assert api.get("/api/brokers/QM1/").json()["description"] == ""


def test_begin_takes_the_brokers_timeout_even_when_it_is_zero(api, broker):
    assert api.patch("/api/brokers/QM1/", {"transaction_timeout_ms": 0}, format="json").status_code == 200
    response = api.post("/api/brokers/QM1/transactions/", {}, format="json")
    assert response.status_code == 201 and response.json()["deadline_at"] is None
    error(api.post("/api/brokers/QM1/transactions/", {"timeout_ms": 0}, format="json"), 400, "invalid")


# --- request rate ---------------------------------------------------------------------------


@override_settings(BATON_API_RATE="3/min")
def test_over_the_rate_is_429_throttled_with_retry_after(api, queue, throttle_cache, as_user):
    for _ in range(3):
        assert api.get("/api/brokers/").status_code == 200
    response = api.post(f"{Q1}/messages/", {"body": "x"}, format="json")
    error(response, 429, "throttled")
    assert 1 <= int(response.headers["Retry-After"]) <= 60
    # per user: another user still has its own allowance
    assert as_user("other").get("/api/brokers/").status_code == 200
    with override_settings(BATON_API_RATE="100000/min"):
        assert api.get(f"{Q1}/").json()["depth"] == 0  # the throttled put stored nothing


@override_settings(BATON_API_RATE="off")
def test_rate_off_never_throttles(api, broker, throttle_cache):
    for _ in range(20):
        assert api.get("/api/brokers/").status_code == 200


@pytest.mark.once  # settings only: no database
def test_default_rate_is_generous():
    assert settings.BATON_API_RATE == "100000/min"


@pytest.mark.once  # settings only: no database
def test_a_malformed_rate_stops_startup():
    import os
    import subprocess
    import sys

    env = {**os.environ, "BATON_API_RATE": "lots", "DJANGO_SETTINGS_MODULE": "config.settings"}
    result = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        env=env,
        capture_output=True,
        text=True,
        cwd=settings.BASE_DIR,
        timeout=60,
        check=False,
    )
    assert result.returncode != 0 and "BATON_API_RATE" in result.stderr


# --- JSON shape -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        "[" * 100_000 + "]" * 100_000,  # deeper than the JSON decoder goes
        '{"body": "x", "properties": ' + '{"a": ' * 40 + "1" + "}" * 40 + "}",  # deeper than MAX_DEPTH
        '{"messages": [' + "[" * 40 + "]" * 40 + "]}",
    ],
)
def test_json_nested_too_deeply_is_400_and_puts_nothing(api, queue, body):
    response = api.generic("POST", f"{Q1}/messages/", body, content_type="application/json")
    assert error(response, 400, "invalid")["errors"] == {"body": ["Nested too deeply."]}
    assert api.get(f"{Q1}/").json()["depth"] == 0


def test_numbers_json_cannot_hold_are_400(api, queue):
    error(
        api.generic(
            "POST", f"{Q1}/messages/", '{"body": "x", "priority": 1' + "0" * 5000 + "}", content_type="application/json"
        ),
        400,
        "invalid",
    )
    error(api.post(f"{Q1}/get/", {"wait": None}, format="json"), 400, "invalid")
    error(api.post("/api/brokers/QM1/", {}, format="json"), 405, "method_not_allowed")
    error(api.post("/api/brokers/QM1/queues/", {"name": "BIG", "max_depth": 2**31}, format="json"), 400, "invalid")
    assert api.get("/api/brokers/QM1/queues/BIG/").status_code == 404
    assert api.get(f"{Q1}/").json()["depth"] == 0

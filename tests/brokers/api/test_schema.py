"""The OpenAPI schema at /api/schema/ and the browsable docs beside it."""

from __future__ import annotations

import re

import pytest
from django.core.management import call_command
from django.urls import URLPattern, get_resolver
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db

METHODS = {"get", "post", "put", "patch", "delete"}


@pytest.fixture
def spec(db) -> dict:
    response = APIClient().get("/api/schema/?format=json")
    assert response.status_code == 200
    return response.json()


def operations(spec: dict):
    for path, item in spec["paths"].items():
        for method, operation in item.items():
            if method in METHODS:
                yield path, method, operation


def test_schema_answers_200_without_a_token(db):
    response = APIClient().get("/api/schema/")
    assert response.status_code == 200
    assert b"openapi: 3" in response.content


def test_docs_pages_answer_200(db):
    for path in ("/api/schema/docs/", "/api/schema/redoc/"):
        response = APIClient().get(path)
        assert response.status_code == 200, path
        assert b"/api/schema/" in response.content


def test_schema_generates_without_warnings(tmp_path):
    """What ``manage.py spectacular --validate --fail-on-warn`` checks: it raises on any
    warning or error, and validates the result against the OpenAPI 3 meta-schema."""
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(tmp_path / "schema.yaml"))
    assert (tmp_path / "schema.yaml").read_text().startswith("openapi: 3")


def test_operation_ids_are_unique(spec):
    ids = [op["operationId"] for _, _, op in operations(spec)]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)


def test_every_api_route_is_documented(spec):
    import brokers.api.urls

    documented = set(spec["paths"])
    for pattern in brokers.api.urls.urlpatterns:
        assert isinstance(pattern, URLPattern)
        route = "/api/" + re.sub(r"<\w+:(\w+)>", r"{\1}", str(pattern.pattern))
        assert route in documented, route
    assert get_resolver()  # the URLconf loads


def test_every_operation_documents_its_body_and_responses(spec):
    for path, method, op in operations(spec):
        if not path.startswith(("/api/brokers/", "/api/transactions/", "/api/locks/", "/api/connections/")):
            continue  # channels and the receiver have their own module
        where = f"{method.upper()} {path}"
        responses = op["responses"]
        assert any(code.startswith("2") for code in responses), where
        for code in ("401", "403", "429"):
            assert responses[code]["content"]["application/json"]["schema"]["$ref"].endswith("/Error"), where
        if method in {"post", "patch"} and not path.endswith(("/abandon/", "/renew/", "/rollback/")):
            assert "requestBody" in op, where
        assert op.get("tags"), where
        for parameter in op.get("parameters", []):
            if parameter["in"] == "path":
                assert parameter["schema"].get("pattern"), (where, parameter["name"])


def test_shapes_of_the_contract(spec):
    schemas = spec["components"]["schemas"]
    assert set(schemas["Error"]["required"]) == {"code", "message"}
    message = set(schemas["MessageOut"]["properties"])
    assert {
        "msg_id",
        "put_time",
        "expires_at",
        "backout_count",
        "delivery_count",
        "queue",
        "broker",
        "body",
        "body_base64",
        "correl_id",
        "group_id",
        "lock_token",
        "locked_until",
    } <= message
    put_in = set(schemas["MessagePutBody"]["properties"])
    assert {"body", "body_base64", "messages", "transaction", "syncpoint", "refers_to", "report"} <= put_in
    commit = spec["paths"]["/api/transactions/{transaction_id}/commit/"]["post"]["responses"]
    assert commit["200"]["content"]["application/json"]["schema"]["$ref"].endswith("Committed")
    assert commit["202"]["content"]["application/json"]["schema"]["$ref"].endswith("CommitHeld")
    assert commit["409"]
    assert {"depth", "uncommitted_puts", "in_flight", "locked"} <= set(schemas["QueueOut"]["required"])
    assert set(schemas["TransactionOut"]["properties"]) >= {
        "id",
        "broker",
        "state",
        "reason",
        "upstream",
        "downstream",
        "created_at",
        "resolved_at",
    }
    assert set(schemas["ResultEnum"]["enum"]) == {"ready", "pending", "backed_out"}
    result = schemas["TransactionCheckOutput"]["properties"]["result"]
    assert (result.get("$ref") or result["allOf"][0]["$ref"]).endswith("/ResultEnum")
    assert {"broker", "queue"}.isdisjoint(put_in), "REST takes them from the path"

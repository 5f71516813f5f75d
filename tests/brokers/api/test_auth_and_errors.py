"""REST contract: authentication and the shape of every error body (docs/api.md, Conventions)."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from tests.helpers import assert_error

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "method,path",
    [
        ("get", "/api/brokers/"),
        ("post", "/api/brokers/"),
        ("get", "/api/brokers/QM1/"),
        ("get", "/api/brokers/QM1/queues/Q1/"),
        ("post", "/api/brokers/QM1/queues/Q1/messages/"),
        ("post", "/api/brokers/QM1/queues/Q1/get/"),
        ("post", "/api/brokers/QM1/transactions/"),
        ("get", "/api/transactions/0123456789abcdef0123456789abcdef/"),
        ("post", "/api/brokers/QM1/connections/"),
    ],
)
def test_no_token_is_401_not_authenticated(queue, method, path):
    client = APIClient()
    response = client.get(path) if method == "get" else client.post(path, {}, format="json")
    assert_error(response, 401, "not_authenticated")
    assert response.headers.get("WWW-Authenticate", "").startswith("Token")


def test_bad_token_is_401_not_authenticated(queue):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token 0000000000000000000000000000000000000000")
    assert_error(client.get("/api/brokers/"), 401, "not_authenticated")
    assert_error(
        client.post("/api/brokers/QM1/queues/Q1/messages/", {"body": "x"}, format="json"), 401, "not_authenticated"
    )


def test_malformed_authorization_header_is_401(queue):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token")
    assert_error(client.get("/api/brokers/"), 401, "not_authenticated")
    client.credentials(HTTP_AUTHORIZATION="Token a b")
    assert_error(client.get("/api/brokers/"), 401, "not_authenticated")


def test_unauthenticated_put_stores_nothing(api, queue):
    APIClient().post("/api/brokers/QM1/queues/Q1/messages/", {"body": "x"}, format="json")
    assert api.get("/api/brokers/QM1/queues/Q1/").json()["depth"] == 0


def test_valid_token_is_accepted(api, broker):
    response = api.get("/api/brokers/")
    assert response.status_code == 200
    assert [b["name"] for b in response.json()["results"]] == ["QM1"]


def test_unknown_endpoint_is_json_404(api):
    body = assert_error(api.get("/api/no-such-thing/"), 404, "not_found")
    assert body["message"]


def test_method_not_allowed_has_code_and_message(api, broker):
    response = api.put("/api/brokers/", {}, format="json")
    assert response.status_code == 405
    body = response.json()
    assert body["code"] and body["message"]


def test_malformed_json_is_400_invalid(api, queue):
    response = api.post("/api/brokers/QM1/queues/Q1/messages/", data=b'{"body": "x"', content_type="application/json")
    assert_error(response, 400, "invalid")
    assert api.get("/api/brokers/QM1/queues/Q1/").json()["depth"] == 0


def test_non_json_content_type_is_an_error_with_code(api, queue):
    response = api.post(
        "/api/brokers/QM1/queues/Q1/messages/", data=b"body=x", content_type="application/x-www-form-urlencoded"
    )
    assert 400 <= response.status_code < 500
    body = response.json()
    assert body["code"] and body["message"]


@pytest.mark.parametrize("raw", [b"[]", b'["x"]', b'"text"', b"5", b"null"])
def test_json_body_that_is_not_an_object_is_400(api, queue, raw):
    response = api.post("/api/brokers/QM1/queues/Q1/messages/", data=raw, content_type="application/json")
    assert_error(response, 400, "invalid")
    assert api.get("/api/brokers/QM1/queues/Q1/").json()["depth"] == 0


def test_openapi_schema_is_served(api):
    response = api.get("/api/schema/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    doc = response.json()
    assert str(doc["openapi"]).startswith("3.")
    assert any(path.startswith("/api/brokers/") for path in doc["paths"])


def test_schema_docs_page_is_served(api):
    assert api.get("/api/schema/docs/").status_code == 200


def test_each_request_reads_the_token_and_its_user_as_they_are_now(api, broker):
    """Nothing about a token is kept between requests: a revoked token, a deactivated user
    and a superuser demoted are refused at the very next request."""
    from django.contrib.auth.models import User
    from rest_framework.authtoken.models import Token

    user = User.objects.get(username="tester")
    assert api.get("/api/brokers/QM1/").status_code == 200
    User.objects.filter(pk=user.pk).update(is_superuser=False)
    assert_error(api.get("/api/brokers/QM1/"), 403, "permission_denied")
    User.objects.filter(pk=user.pk).update(is_superuser=True, is_active=False)
    body = assert_error(api.get("/api/brokers/QM1/"), 401, "not_authenticated")
    assert body["message"] == "User inactive or deleted."
    User.objects.filter(pk=user.pk).update(is_active=True)
    assert api.get("/api/brokers/QM1/").status_code == 200
    Token.objects.filter(user=user).delete()
    body = assert_error(api.get("/api/brokers/QM1/"), 401, "not_authenticated")
    assert body["message"] == "Invalid token."


def test_the_token_read_gives_the_token_and_user_the_orm_gives(api):
    from rest_framework.authtoken.models import Token

    from brokers.api.authentication import token_read

    expected = Token.objects.select_related("user").get(user__username="tester")
    token = token_read(expected.key)
    assert (token.key, token.user_id, token.created) == (expected.key, expected.user_id, expected.created)
    fields = [f.attname for f in type(expected.user)._meta.concrete_fields]
    assert [getattr(token.user, f) for f in fields] == [getattr(expected.user, f) for f in fields]
    assert token.user.is_authenticated and not token.user._state.adding
    assert token_read("0" * 40) is None and token_read("a\x00b") is None and token_read("x" * 41) is None

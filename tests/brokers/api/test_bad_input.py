"""Bad input is a 4xx, never a 500: text no database can store (NUL, lone surrogates), ids
with NUL in the path, JSON of the wrong type. (PostgreSQL refuses NUL where SQLite takes
it; the API refuses it on both, so these run on SQLite.)"""

from __future__ import annotations

import base64

import pytest

pytestmark = pytest.mark.django_db

Q1 = "/api/brokers/QM1/queues/Q1"


def post_raw(api, path: str, raw: str):
    return api.post(path, data=raw, content_type="application/json")


def invalid(response, *fields: str) -> dict:
    assert response.status_code == 400, (response.status_code, response.content[:300])
    body = response.json()
    assert body["code"] == "invalid", body
    for field in fields:
        assert field in body["errors"], body
    return body


@pytest.mark.parametrize(
    "raw,field",
    [
        ('{"body": "a", "format": "x\\u0000y"}', "format"),
        ('{"body": "a", "properties": {"k": "\\u0000"}}', "properties.k"),
        ('{"body": "a", "properties": {"k": ["ok", "\\u0000"]}}', "properties.k[1]"),
        ('{"body": "a", "transaction": "\\u0000"}', "transaction"),
        ('{"body": "a", "connection": "\\u0000"}', "connection"),
        ('{"body": "a", "put_application": "\\u0000"}', "put_application"),
        ('{"messages": [{"body": "a", "reply_to_queue": "\\u0000"}]}', "messages[0].reply_to_queue"),
        ('{"body": "\\ud800"}', "body"),
        ('{"messages": [{"body": "ok"}, {"body": "\\udfff"}]}', "messages[1].body"),
        ('{"body": "a", "properties": {"\\u0000": 1}}', "properties.\x00"),
    ],
)
def test_unstorable_text_in_a_put_is_400(api, queue, raw, field):
    invalid(post_raw(api, f"{Q1}/messages/", raw), field)
    assert api.get(f"{Q1}/").json()["depth"] == 0


def test_a_lone_surrogate_in_a_field_name_is_reported_escaped(api, queue):
    body = invalid(post_raw(api, f"{Q1}/messages/", '{"body": "a", "properties": {"\\ud800": 1}}'))
    assert list(body["errors"]) == ["properties.\\ud800"]


def test_nul_in_a_message_body_is_fine(api, queue):
    """A body is stored as bytes: text with NUL in it goes in and comes back."""
    assert post_raw(api, f"{Q1}/messages/", '{"body": "a\\u0000b"}').status_code == 201
    assert post_raw(api, f"{Q1}/messages/", '{"messages": [{"body": "\\u0000"}]}').status_code == 201
    got = api.post(f"{Q1}/get/", {"batch": 2}, format="json").json()["messages"]
    assert [base64.b64decode(m["body_base64"]) for m in got] == [b"a\x00b", b"\x00"]
    assert got[0]["body"] == "a\x00b"


@pytest.mark.parametrize(
    "path,raw,field",
    [
        ("/api/brokers/", '{"name": "QM2", "description": "\\u0000"}', "description"),
        ("/api/brokers/QM1/queues/", '{"name": "Q2", "description": "\\ud83d"}', "description"),
        ("/api/brokers/QM1/connections/", '{"client_name": "\\u0000"}', "client_name"),
        ("/api/brokers/QM1/queues/Q1/get/", '{"correl_id": "\\u0000"}', "correl_id"),
        ("/api/locks/abc/dead-letter/", '{"reason": "\\u0000"}', "reason"),
    ],
)
def test_unstorable_text_anywhere_is_400(api, queue, path, raw, field):
    invalid(post_raw(api, path, raw), field)


@pytest.mark.parametrize(
    "path",
    [
        "/api/transactions/%00/",
        "/api/transactions/a%00b/commit/",
        "/api/connections/%00/",
        "/api/locks/%00/renew/",
        "/api/brokers/%00/",
        "/api/brokers/QM1/queues/%00/",
    ],
)
def test_nul_in_a_path_is_404(api, queue, path):
    for response in (api.get(path), api.post(path, {}, format="json")):
        assert response.status_code == 404 and response.json()["code"] == "not_found", response.content


@pytest.mark.parametrize("raw", ["[]", '"text"', "3", "null"])
def test_a_body_that_is_not_an_object_is_400(api, queue, raw):
    invalid(post_raw(api, f"{Q1}/messages/", raw))
    invalid(post_raw(api, f"{Q1}/get/", raw))


@pytest.mark.parametrize(
    "message",
    [
        {"body": "a", "persistence": {}},
        {"body": "a", "refers_to": {"msg_id": "0" * 48, "action": []}},
    ],
)
def test_unhashable_choices_are_400(api, queue, message):
    invalid(api.post(f"{Q1}/messages/", message, format="json"))

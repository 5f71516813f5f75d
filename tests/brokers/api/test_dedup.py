"""REST: a put's ``dedup_key`` (duplicate detection)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db

PUT = "/api/brokers/QM1/queues/Q1/messages/"


def test_a_batch_put_with_duplicates_puts_the_rest_and_lists_the_skipped(api, queue):
    first = api.post(PUT, {"messages": [{"body": "a", "dedup_key": "k1"}]}, format="json")
    assert first.status_code == 201 and first.json()["duplicates"] == []
    original = first.json()["messages"][0]["msg_id"]
    again = api.post(
        PUT, {"messages": [{"body": "a", "dedup_key": "k1"}, {"body": "b", "dedup_key": "k2"}]}, format="json"
    )
    assert again.status_code == 201, again.content
    body = again.json()
    assert [m["body"] for m in body["messages"]] == ["b"]
    assert body["duplicates"] == [{"index": 0, "dedup_key": "k1", "msg_id": original, "duplicate": True}]


def test_a_single_duplicate_put_answers_200_naming_the_original(api, queue):
    first = api.post(PUT, {"body": "a", "dedup_key": "k1"}, format="json")
    assert first.status_code == 201
    again = api.post(PUT, {"body": "a", "dedup_key": "k1"}, format="json")
    assert again.status_code == 200, again.content
    assert again.json() == {
        "index": 0,
        "dedup_key": "k1",
        "msg_id": first.json()["msg_id"],
        "duplicate": True,
        "transaction": None,
    }


@pytest.mark.parametrize("key", ["", 5, "x" * 201])
def test_a_bad_key_is_invalid(api, queue, key):
    response = api.post(PUT, {"body": "a", "dedup_key": key}, format="json")
    assert response.status_code == 400 and response.json()["code"] == "invalid"
    assert "dedup_key" in response.json()["errors"]

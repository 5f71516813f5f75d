"""A JSON object that names a key twice is refused (400 ``invalid``, naming the key) in
REST bodies and in session frames, and nothing is applied: a proxy keeping the first value
and Baton keeping the last would otherwise read two different requests
(brokers/api/parsers.py, ``DuplicateKey``)."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from brokers.models import Message
from brokers.services.brokers import broker_define
from brokers.services.queues import queue_define
from tests.brokers.api.session_thread import session_thread_run

PUT = "/api/brokers/QM1/queues/Q1/messages/"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("text", "key"),
    [
        ('{"body": "harmless", "body": "payload"}', "body"),
        ('{"body": "x", "properties": {"role": "user", "role": "admin"}}', "role"),
        ('{"messages": [{"body": "a", "priority": 1, "priority": 9}]}', "priority"),
    ],
)
def test_a_rest_body_naming_a_key_twice_is_400_and_puts_nothing(api, queue, text, key):
    response = api.post(PUT, text, content_type="application/json")
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["code"] == "invalid" and key in body["errors"], body
    assert not Message.objects.exists()


@pytest.mark.django_db
def test_a_rest_body_with_distinct_keys_is_put(api, queue):
    response = api.post(PUT, '{"body": "one", "properties": {"a": {"body": 1}}}', content_type="application/json")
    assert response.status_code == 201, response.content


@pytest.mark.django_db(transaction=True)
def test_a_session_frame_naming_a_key_twice_is_refused_and_applies_nothing(transactional_db):
    broker_define(name="QM1")
    queue_define(broker="QM1", name="Q1")
    user = get_user_model().objects.create_superuser("tester")
    frames = [
        '{"id": 1, "op": "put", "broker": "QM1", "queue": "Q1", "body": "a", "queue": "Q2"}',
        '{"id": 2, "op": "put", "broker": "QM1", "queue": "Q1", "body": "b"}',
    ]
    replies = sorted(session_thread_run(user, frames).replies, key=lambda r: r["re"] or 0)
    refused, applied = replies
    assert (refused["status"], refused["code"]) == (400, "invalid") and "queue" in refused["errors"], refused
    assert applied["re"] == 2 and applied["status"] == 201, applied
    assert [bytes(m.body) for m in Message.objects.all()] == [b"b"]

"""Duplicate detection on put (``dedup_key``): keys are taken in the put's database
transaction, outlive their messages for the retention their put declared, and are given back
when a unit of work rolls back."""

from __future__ import annotations

from datetime import timedelta

import pytest

from brokers.models import DedupKey
from brokers.services.message_input import MessageInput
from brokers.services.messages import message_get, message_put
from transactions.manager import transaction_begin, transaction_commit, transaction_rollback
from tests.conftest import bodies

pytestmark = pytest.mark.django_db


def keyed(*pairs: tuple[str, str]) -> list[MessageInput]:
    return [MessageInput(body=body.encode(), dedup_key=key) for key, body in pairs]


def test_a_taken_key_is_skipped_and_the_rest_are_put(queue):
    first = message_put(broker="QM1", queue="Q1", messages=keyed(("k1", "a"), ("k2", "b")))
    assert first.duplicates == []
    again = message_put(broker="QM1", queue="Q1", messages=keyed(("k2", "b again"), ("k3", "c"), ("k3", "c twice")))
    assert bodies(again) == ["c"]
    assert [(d.index, d.dedup_key) for d in again.duplicates] == [(0, "k2"), (2, "k3")]
    assert again.duplicates[0].msg_id == first.messages[1].msg_id
    assert again.duplicates[1].msg_id == again.messages[0].msg_id
    got = message_get(broker="QM1", queue="Q1", batch=10)
    assert bodies(got) == ["a", "b", "c"]


def test_a_key_outlives_its_message(queue):
    message_put(broker="QM1", queue="Q1", messages=keyed(("k1", "a")))
    assert bodies(message_get(broker="QM1", queue="Q1")) == ["a"]
    result = message_put(broker="QM1", queue="Q1", messages=keyed(("k1", "a")))
    assert result.messages == [] and [d.dedup_key for d in result.duplicates] == ["k1"]
    assert message_get(broker="QM1", queue="Q1").messages == []


def test_keys_are_per_queue_and_messages_without_a_key_are_never_skipped(queue):
    from brokers.services.queues import queue_define

    queue_define(broker="QM1", name="Q2")
    message_put(broker="QM1", queue="Q1", messages=keyed(("k1", "a")) + [MessageInput(body=b"plain")])
    result = message_put(broker="QM1", queue="Q2", messages=keyed(("k1", "a")) + [MessageInput(body=b"plain")])
    assert bodies(result) == ["a", "plain"] and result.duplicates == []


def test_a_rolled_back_unit_of_work_gives_its_keys_back(queue):
    txn = transaction_begin(broker="QM1", timeout_ms=60_000)
    message_put(broker="QM1", queue="Q1", messages=keyed(("k1", "a")), transaction_id=txn.id)
    assert DedupKey.objects.filter(key="k1").exists()
    transaction_rollback(transaction_id=txn.id)
    assert not DedupKey.objects.filter(key="k1").exists()
    assert bodies(message_put(broker="QM1", queue="Q1", messages=keyed(("k1", "a")))) == ["a"]


def test_a_committed_unit_of_work_keeps_its_keys(queue):
    txn = transaction_begin(broker="QM1", timeout_ms=60_000)
    message_put(broker="QM1", queue="Q1", messages=keyed(("k1", "a")), transaction_id=txn.id)
    transaction_commit(transaction_id=txn.id)
    assert message_put(broker="QM1", queue="Q1", messages=keyed(("k1", "a"))).messages == []


def test_a_refused_put_takes_no_key(queue):
    from baton_client.errors import QueueFull
    from brokers.services.queues import queue_alter

    queue_alter(broker="QM1", name="Q1", max_depth=1)
    message_put(broker="QM1", queue="Q1", messages=[MessageInput(body=b"filler")])
    with pytest.raises(QueueFull):
        message_put(broker="QM1", queue="Q1", messages=keyed(("k1", "a")))
    assert not DedupKey.objects.exists()


# --- retention ------------------------------------------------------------------------------


def retained(key: str, body: str, ms: int) -> MessageInput:
    return MessageInput(body=body.encode(), dedup_key=key, dedup_retention_ms=ms)


def test_a_key_is_remembered_for_its_retention_then_put_again(queue, clock):
    first = message_put(broker="QM1", queue="Q1", messages=[retained("k1", "a", 60_000)])
    stored = DedupKey.objects.get(key="k1")
    assert stored.expires_at == stored.created_at + timedelta(minutes=1)
    clock.now = stored.expires_at - timedelta(microseconds=1)  # its last moment: still a duplicate
    again = message_put(broker="QM1", queue="Q1", messages=[retained("k1", "a", 60_000)])
    assert again.messages == [] and again.duplicates[0].msg_id == first.messages[0].msg_id
    clock.now = stored.expires_at  # forgotten, whether housekeeping has swept it or not
    later = message_put(broker="QM1", queue="Q1", messages=[retained("k1", "a", 60_000)])
    assert bodies(later) == ["a"] and later.duplicates == []
    renewed = DedupKey.objects.get(key="k1")
    assert (renewed.msg_id, renewed.expires_at) == (later.messages[0].msg_id, clock.now + timedelta(minutes=1))


def test_housekeeping_forgets_only_keys_past_their_retention(queue, clock):
    from brokers.services.housekeeping import dedup_keys_sweep

    message_put(
        broker="QM1",
        queue="Q1",
        messages=[retained("short", "a", 1_000), retained("long", "b", 60_000)] + keyed(("forever", "c")),
    )
    clock.advance(seconds=1)
    assert dedup_keys_sweep() == 1
    assert sorted(DedupKey.objects.values_list("key", flat=True)) == ["forever", "long"]
    clock.advance(days=3650)
    assert dedup_keys_sweep(limit=5) == 1
    assert list(DedupKey.objects.values_list("key", flat=True)) == ["forever"]


@pytest.mark.parametrize(
    "message, field",
    [
        ({"body": "a", "dedup_retention_ms": 1000}, "dedup_retention_ms"),
        ({"body": "a", "dedup_key": "k", "dedup_retention_ms": 0}, "dedup_retention_ms"),
        ({"body": "a", "dedup_key": "k", "dedup_retention_ms": "7d"}, "dedup_retention_ms"),
    ],
)
def test_a_bad_retention_is_invalid_and_puts_nothing(api, queue, message, field):
    r = api.post("/api/brokers/QM1/queues/Q1/messages/", message, format="json")
    assert r.status_code == 400 and r.json()["code"] == "invalid", r.content
    assert field in r.json()["errors"], r.json()
    assert not DedupKey.objects.exists()

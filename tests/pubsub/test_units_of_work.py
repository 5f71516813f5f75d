"""Publications under a unit of work: the copies are its uncommitted puts (pre-emptive gets
take them and link to the publisher), the retained publication and activations change at
commit, a rollback delivers nothing."""

from __future__ import annotations

import pytest

from brokers.services.messages import message_get
from pubsub.models import PendingEffect, RetainedPublication, Subscription
from pubsub.services.subscriptions import subscription_define
from transactions.manager import transaction_begin, transaction_commit, transaction_rollback
from transactions.models import Transaction
from transactions.selectors import transaction_neighbours

from .conftest import publish, received

pytestmark = pytest.mark.django_db


def begin() -> str:
    return transaction_begin(broker="QM1", timeout_ms=60_000).id


def test_copies_are_uncommitted_puts_a_preemptive_get_takes_and_links(queues):
    subscription_define(broker="QM1", name="a", topic_filter="t/#", queue="S1")
    publisher = begin()
    assert publish("t/1", "p", transaction_id=publisher).matched == 1
    assert received("S1") == []  # not committed
    assert message_get(broker="QM1", queue="S1").messages == []
    consumer = begin()
    got = message_get(broker="QM1", queue="S1", transaction_id=consumer, preemptive=True)
    assert [bytes(m.body) for m in got.messages] == [b"p"]
    assert transaction_neighbours(transaction_id=consumer) == ([publisher], [])
    assert transaction_commit(transaction_id=consumer).state == "commit_held"
    transaction_commit(transaction_id=publisher)
    assert Transaction.objects.get(pk=consumer).state == "committed"
    assert received("S1") == []  # taken by the consumer


def test_retained_changes_only_at_commit(queues):
    publish("r", "old", retain=True)
    txn = begin()
    publish("r", "new", retain=True, transaction_id=txn)
    assert bytes(RetainedPublication.objects.get(topic="r").body) == b"old"
    assert PendingEffect.objects.count() == 1
    transaction_commit(transaction_id=txn)
    assert bytes(RetainedPublication.objects.get(topic="r").body) == b"new"
    assert PendingEffect.objects.count() == 0


def test_rollback_delivers_nothing_and_retains_nothing(queues):
    subscription_define(broker="QM1", name="a", topic_filter="#", queue="S1")
    txn = begin()
    publish("r", "gone", retain=True, transaction_id=txn)
    transaction_rollback(transaction_id=txn)
    assert received("S1") == []
    assert not RetainedPublication.objects.exists() and not PendingEffect.objects.exists()


def test_activation_under_a_unit_of_work_at_commit(queues):
    publish("p", "kept", retain=True)
    subscription_define(broker="QM1", name="w", topic_filter="p", queue="S1", activation_topic="go")
    txn = begin()
    publish("go", transaction_id=txn)
    assert not Subscription.objects.get(name="w").active
    transaction_commit(transaction_id=txn)
    assert Subscription.objects.get(name="w").active
    assert received("S1") == [("p", "kept", True)]


def test_unit_of_work_without_publications_has_no_pubsub_mark(queues):
    from brokers.services.messages import message_put
    from tests.conftest import msgs

    txn = begin()
    message_put(broker="QM1", queue="S1", messages=msgs("plain"), transaction_id=txn)
    assert "pubsub" not in Transaction.objects.get(pk=txn).marks
    txn2 = begin()
    publish("nothing/retained", transaction_id=txn2)  # no effects: no mark either
    assert "pubsub" not in Transaction.objects.get(pk=txn2).marks

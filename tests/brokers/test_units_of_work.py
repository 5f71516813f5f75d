"""Beginning a unit of work from the definitions cache, checked in the database transaction
that writes it (brokers/services/units_of_work.py)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from brokers.exceptions import BrokerNotFound
from brokers.services.brokers import broker_alter, broker_define, broker_delete
from brokers.services.units_of_work import unit_of_work_begin
from transactions.manager import transaction_commit
from transactions.models import Transaction

pytestmark = pytest.mark.django_db(transaction=True)  # the steps drive their own transactions


def _timeout(txn) -> timedelta:
    return txn.deadline_at - txn.created_at


def test_a_begin_takes_the_brokers_timeout_and_the_one_asked_for(broker):
    txn = unit_of_work_begin(broker="QM1", timeout_ms=None, user_id=None)
    assert _timeout(txn) == timedelta(seconds=60)
    assert Transaction.objects.get(pk=txn.id).state == "active"
    assert _timeout(unit_of_work_begin(broker="QM1", timeout_ms=1_500, user_id=None)) == timedelta(seconds=1.5)


def test_a_begin_after_the_broker_changed_uses_its_new_definition(broker):
    unit_of_work_begin(broker="QM1", timeout_ms=None, user_id=None)  # the cache holds QM1
    broker_alter(name="QM1", transaction_timeout_ms=5_000)
    txn = unit_of_work_begin(broker="QM1", timeout_ms=None, user_id=None)
    assert _timeout(txn) == timedelta(seconds=5)
    assert Transaction.objects.filter(broker="QM1").count() == 2  # the refused try wrote nothing


def test_a_begin_on_a_broker_deleted_since_it_was_cached_is_refused(broker):
    broker_define(name="QM2")
    transaction_commit(transaction_id=unit_of_work_begin(broker="QM2", timeout_ms=None, user_id=None).id)
    broker_delete(name="QM2")
    with pytest.raises(BrokerNotFound):
        unit_of_work_begin(broker="QM2", timeout_ms=None, user_id=None)
    assert Transaction.objects.filter(broker="QM2").count() == 1


def test_a_begin_on_a_broker_defined_since_the_cache_was_filled_is_made(broker):
    unit_of_work_begin(broker="QM1", timeout_ms=None, user_id=None)
    broker_define(name="QM3", transaction_timeout_ms=7_000)
    assert _timeout(unit_of_work_begin(broker="QM3", timeout_ms=None, user_id=None)) == timedelta(seconds=7)

"""A pre-emptive channel's look while it gathers (``queries.messages_upstream_pending``): is
something still on its way to the queue — a unit of work that put a gathered message not
committed, or an open unit of work's put on the queue not gotten yet?"""

from __future__ import annotations

import pytest

from brokers.queries import messages_upstream_pending
from brokers.services.messages import message_get, message_put
from tests.conftest import msgs
from transactions.manager import transaction_begin, transaction_commit, transaction_rollback

pytestmark = pytest.mark.django_db


def pending(queue, units=()) -> bool:
    return messages_upstream_pending(queue_id=queue.pk, transaction_ids=sorted(units))


def test_an_open_units_put_not_gotten_is_on_its_way_until_it_commits(queue):
    assert not pending(queue)
    message_put(broker="QM1", queue="Q1", messages=msgs("committed"))
    assert not pending(queue)  # committed messages are there, not on their way
    upstream = transaction_begin(broker="QM1", timeout_ms=60_000).id
    message_put(broker="QM1", queue="Q1", messages=msgs("open"), transaction_id=upstream)
    assert pending(queue)
    transaction_commit(transaction_id=upstream)
    assert not pending(queue)


def test_an_open_units_put_already_gotten_is_not_on_its_way(queue):
    upstream = transaction_begin(broker="QM1", timeout_ms=60_000).id
    message_put(broker="QM1", queue="Q1", messages=msgs("open"), transaction_id=upstream)
    gatherer = transaction_begin(broker="QM1", timeout_ms=60_000).id
    assert len(message_get(broker="QM1", queue="Q1", transaction_id=gatherer, preemptive=True).messages) == 1
    assert not pending(queue)
    assert pending(queue, {upstream})  # the gathered message's unit of work has not committed


@pytest.mark.parametrize("outcome", ["committed", "rolled_back"])
def test_a_gathered_messages_unit_is_pending_until_it_commits(queue, outcome):
    upstream = transaction_begin(broker="QM1", timeout_ms=60_000).id
    other = transaction_begin(broker="QM1", timeout_ms=60_000).id
    assert pending(queue, {upstream, other})
    transaction_commit(transaction_id=other)
    assert pending(queue, {upstream, other})
    if outcome == "committed":
        transaction_commit(transaction_id=upstream)
    else:
        transaction_rollback(transaction_id=upstream)
    assert pending(queue, {upstream, other}) is (outcome == "rolled_back")

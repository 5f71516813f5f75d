"""Several peek-locks completed at once (``locks_complete``, what STOMP's ACKs of one
transaction become): under one unit of work or, without one, at once; all of them or none,
with the same refusals as one complete; and STOMP ACKs sent together in a transaction."""

from __future__ import annotations

import pytest

from brokers.models import Message
from baton_client.errors import LockLost
from brokers.services.locks import LockNotFound, lock_abandon, locks_complete
from brokers.services.queues import queue_define
from baton_client.errors import Conflict

from .conftest import BROKER, begin, commit, get, get_bodies, put, rollback

pytestmark = pytest.mark.postgres  # also run on PostgreSQL

PAST = "2000-01-01T00:00:00Z"


def _locks(queue: str, n: int) -> list[str]:
    result = get(queue, mode="peek_lock", batch=n)
    assert len(result.messages) == n, result.reason
    return [m.lock_token for m in result.messages]


def _pending(tokens: list[str]) -> list[str | None]:
    return [Message.objects.get(lock_token=t).get_transaction_id for t in tokens]


def test_all_complete_at_the_commit_and_come_back_locked_at_a_rollback(pq):
    put(pq, "M1", "M2", "M3")
    tokens = _locks(pq, 3)
    txn = begin()
    assert locks_complete(tokens=tokens, transaction_id=txn) == "pending_commit"
    assert _pending(tokens) == [txn] * 3
    rollback(txn)
    assert _pending(tokens) == [None] * 3  # still locked, by the same tokens
    txn = begin()
    locks_complete(tokens=tokens, transaction_id=txn)
    commit(txn)
    assert Message.objects.filter(queue__name=pq).count() == 0


def test_without_a_unit_of_work_all_are_gone_at_once(broker):
    q = queue_define(broker=BROKER, name="QFULL", max_depth=4).name
    put(q, "M1", "M2", "M3", "M4")
    tokens = _locks(q, 3)
    assert locks_complete(tokens=tokens, transaction_id=None) == "completed"
    assert Message.objects.filter(queue__name=q).count() == 1
    put(q, "M5", "M6", "M7")  # the queue's depth counts M4 alone again: room for three
    assert get_bodies(q, batch=4) == ["M4", "M5", "M6", "M7"]


@pytest.mark.parametrize("spoil", ["unknown", "lapsed", "pending"])
@pytest.mark.parametrize("under", [True, False], ids=["under_a_unit_of_work", "at_once"])
def test_one_refused_token_completes_none(pq, spoil, under):
    put(pq, "M1", "M2", "M3")
    tokens = _locks(pq, 3)
    held = list(tokens)
    other = begin()
    if spoil == "unknown":
        tokens[1], expected = "0" * 32, LockNotFound
    elif spoil == "lapsed":
        Message.objects.filter(lock_token=tokens[1]).update(locked_until=PAST)
        expected = LockLost
    else:
        locks_complete(tokens=[tokens[1]], transaction_id=other)
        expected = Conflict
    txn = begin()
    with pytest.raises(expected):
        locks_complete(tokens=tokens, transaction_id=txn if under else None)
    for token in (tokens[0], tokens[2]):
        assert Message.objects.get(lock_token=token).get_transaction_id is None
        lock_abandon(token=token)
    rollback(other)
    rollback(txn)
    if spoil != "lapsed":  # (a lapsed lock is released by the next get)
        lock_abandon(token=held[1])
    assert sorted(get_bodies(pq, batch=3)) == ["M1", "M2", "M3"]

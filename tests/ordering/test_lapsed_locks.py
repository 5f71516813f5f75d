"""A peek-lock that has run out is released by the very next get on its queue (no
housekeeping needed), exactly as housekeeping would release it: the delivery count stays,
the delivery limit dead-letters, the old holder hears lock_lost. At the edge of expiry, on
a clock the tests move by hand (``clock``)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from brokers.models import Message
from baton_client.errors import LockLost
from brokers.services.locks import LockNotFound, lock_complete, lock_renew, locks_expire
from brokers.services.queues import queue_define
from tests.conftest import bodies

from .conftest import BROKER, begin, get, put, rollback

pytestmark = pytest.mark.postgres

DLQ = "SYSTEM.DEAD.LETTER.QUEUE"


@pytest.fixture
def lq(broker):
    """A queue with a 5 s lock duration and a delivery limit of 3."""
    return queue_define(broker=BROKER, name="QL", lock_duration_ms=5_000, backout_threshold=3).name


def _lock(queue: str):
    result = get(queue, mode="peek_lock")
    assert len(result.messages) == 1, result.reason
    return result.messages[0]


@pytest.mark.parametrize("mode", ["destructive", "peek_lock", "ordered", "under_uow"])
def test_the_next_get_after_the_lock_ends_takes_the_message(lq, clock, mode):
    put(lq, "M1")
    held = _lock(lq)
    options = {
        "destructive": {},
        "peek_lock": {"mode": "peek_lock"},
        "ordered": {"ordered": True},
        "under_uow": {"transaction_id": begin()},
    }[mode]
    clock.now = held.locked_until - timedelta(microseconds=1)  # the lock's last moment
    assert get(lq, **options).messages == []
    assert Message.objects.get(pk=held.pk).lock_token == held.lock_token
    clock.now = held.locked_until  # it has run out
    result = get(lq, **options)
    assert bodies(result) == ["M1"]
    assert result.messages[0].delivery_count == (2 if mode in ("peek_lock", "under_uow") else 1)
    # as after housekeeping's release: lost while the message stays, unknown once a final get took it
    lost = LockLost if mode in ("peek_lock", "under_uow") else LockNotFound
    with pytest.raises(lost):
        lock_complete(token=held.lock_token)
    with pytest.raises(lost):
        lock_renew(token=held.lock_token)


def test_released_by_a_get_the_old_holder_hears_lock_lost_even_after_a_rollback(lq, clock):
    put(lq, "M1")
    held = _lock(lq)
    clock.advance(seconds=5)
    txn = begin()
    assert bodies(get(lq, transaction_id=txn)) == ["M1"]
    rollback(txn)
    stored = Message.objects.get(queue__name=lq)
    assert (stored.lock_token, stored.lapsed_lock_token, stored.backout_count) == (None, held.lock_token, 1)
    with pytest.raises(LockLost):
        lock_complete(token=held.lock_token)
    assert locks_expire() == 0  # nothing left for housekeeping


def test_a_get_that_finds_nothing_else_still_releases_the_lock(lq, clock):
    """A get by correlation id that does not match still settles the queue's lapsed locks."""
    put(lq, "M1")
    held = _lock(lq)
    clock.advance(seconds=6)
    assert get(lq, correl_id="ab" * 24).reason == "no_match"
    stored = Message.objects.get(pk=held.pk)
    assert (stored.lock_token, stored.locked_until, stored.delivery_count) == (None, None, 1)


def test_at_the_delivery_limit_the_get_dead_letters_as_housekeeping_would(lq, clock):
    put(lq, "M1", "M2")
    for count in (1, 2, 3):
        held = _lock(lq)
        assert (bytes(held.body), held.delivery_count) == (b"M1", count)
        clock.advance(seconds=5)
    # the third lock ran out at the limit: this get moves M1 to the dead-letter queue and takes M2
    assert bodies(get(lq)) == ["M2"]
    dead = Message.objects.get(queue__name=DLQ)
    assert bytes(dead.body) == b"M1" and dead.dead_letter_queue == lq
    assert dead.dead_letter_reason == "lock expired; delivery count 3 reached the delivery limit"
    assert (dead.lock_token, dead.lapsed_lock_token, dead.delivery_count) == (None, held.lock_token, 3)
    assert Message.objects.filter(queue__name=lq).count() == 0
    with pytest.raises(LockLost):
        lock_complete(token=held.lock_token)


def test_a_browse_get_changes_nothing(lq, clock):
    put(lq, "M1")
    held = _lock(lq)
    clock.advance(seconds=5)
    get(lq, mode="browse")
    assert Message.objects.get(pk=held.pk).lock_token == held.lock_token
    assert locks_expire() == 1  # housekeeping still tidies what no get met


def test_a_lock_completed_under_a_unit_of_work_is_not_released(lq, clock):
    put(lq, "M1")
    held = _lock(lq)
    txn = begin()
    lock_complete(token=held.lock_token, transaction_id=txn)
    clock.advance(seconds=5)
    assert get(lq).messages == []
    stored = Message.objects.get(pk=held.pk)
    assert (stored.lock_token, stored.get_transaction_id) == (held.lock_token, txn)

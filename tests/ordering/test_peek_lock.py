"""Peek-lock: lock tokens, invisibility while locked, complete (at once or under a unit of
work), abandon, renew, dead-letter, expiry, the delivery limit, lost and unknown locks;
through the services and through the REST endpoints."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from brokers.api.operations.locks import LockDeadLetter
from baton_client.errors import InvalidInput, OptionsConflict
from brokers.models import Message
from brokers.selectors import queue_depths, queue_get, queue_reserved_depth
from baton_client.errors import LockLost
from brokers.services.locks import LockNotFound, lock_abandon, lock_complete, lock_dead_letter, lock_renew, locks_expire
from brokers.services.queues import queue_define
from baton_client.errors import Conflict
from tests.conftest import bodies
from tests.helpers import assert_error as _error

from .conftest import BROKER, begin, browse, commit, get, put, rollback

pytestmark = pytest.mark.postgres  # also run on PostgreSQL

DLQ = "SYSTEM.DEAD.LETTER.QUEUE"
PAST = "2000-01-01T00:00:00Z"


def _depth(queue: str = "Q1") -> dict:
    q = queue_get(broker=BROKER, name=queue)
    return queue_depths(queue_ids=[q.pk])[q.pk]


def _lock(queue: str = "Q1"):
    result = get(queue, mode="peek_lock")
    assert len(result.messages) == 1, result.reason
    return result.messages[0]


def _expire(token: str) -> None:
    assert Message.objects.filter(lock_token=token).update(locked_until=PAST) == 1


@pytest.fixture
def lq(broker):
    """A queue with a 5 s lock duration."""
    return queue_define(broker=BROKER, name="QL", lock_duration_ms=5_000).name


# --- taking a lock --------------------------------------------------------------------------


def test_peek_lock_returns_token_and_lock_end_and_counts_the_delivery(lq):
    put(lq, "M1", "M2")
    before = timezone.now()
    m = _lock(lq)
    after = timezone.now()
    assert bytes(m.body) == b"M1"
    assert m.lock_token and len(m.lock_token) >= 16
    assert before + timedelta(seconds=5) <= m.locked_until <= after + timedelta(seconds=5)
    assert m.delivery_count == 1
    stored = Message.objects.get(pk=m.pk)
    assert (stored.lock_token, stored.locked_until, stored.delivery_count) == (m.lock_token, m.locked_until, 1)
    assert stored.get_transaction_id is None


def test_locked_message_is_invisible_to_other_gets_and_counted_as_locked(pq):
    put(pq, "M1")
    _lock(pq)
    for options in ({}, {"transaction_id": begin()}, {"mode": "peek_lock"}, {"mode": "browse"}):
        result = get(pq, **options)
        assert (result.messages, result.reason) == ([], "empty"), options
    assert browse(pq, ordered=False)[0] == []
    assert _depth(pq) == {"depth": 1, "uncommitted_puts": 0, "in_flight": 0, "locked": 1}


def test_two_peek_locks_take_different_messages(pq):
    put(pq, "M1", "M2")
    a, b = _lock(pq), _lock(pq)
    assert {bytes(a.body), bytes(b.body)} == {b"M1", b"M2"}
    assert a.lock_token != b.lock_token


def test_peek_lock_is_not_part_of_a_unit_of_work(pq):
    put(pq, "M1")
    with pytest.raises(OptionsConflict):
        get(pq, mode="peek_lock", transaction_id=begin())
    with pytest.raises(OptionsConflict):
        get(pq, mode="peek_lock", syncpoint="yes")
    with pytest.raises(OptionsConflict):
        get(pq, mode="peek_lock", preemptive=True, transaction_id=begin())
    assert _depth(pq)["locked"] == 0 and _depth(pq)["in_flight"] == 0


# --- complete -------------------------------------------------------------------------------


def test_complete_removes_the_message(pq):
    put(pq, "M1", "M2")
    m = _lock(pq)
    assert lock_complete(token=m.lock_token) == "completed"
    assert not Message.objects.filter(pk=m.pk).exists()
    assert _depth(pq) == {"depth": 1, "uncommitted_puts": 0, "in_flight": 0, "locked": 0}
    assert queue_reserved_depth(queue=queue_get(broker=BROKER, name=pq)) == 1
    with pytest.raises(LockNotFound):
        lock_complete(token=m.lock_token)


def test_complete_under_unit_of_work_removes_only_when_it_commits(pq):
    put(pq, "M1")
    m = _lock(pq)
    txn = begin()
    assert lock_complete(token=m.lock_token, transaction_id=txn) == "pending_commit"
    assert Message.objects.filter(pk=m.pk).exists()
    assert get(pq).messages == []
    # a second completion, an abandon or a dead-letter while it is pending are refused
    with pytest.raises(Conflict):
        lock_complete(token=m.lock_token)
    with pytest.raises(Conflict):
        lock_abandon(token=m.lock_token)
    with pytest.raises(Conflict):
        lock_dead_letter(token=m.lock_token, reason="no")
    # the lock running out meanwhile does not release it
    _expire(m.lock_token)
    assert locks_expire() == 0
    commit(txn)
    assert not Message.objects.filter(pk=m.pk).exists()
    assert queue_reserved_depth(queue=queue_get(broker=BROKER, name=pq)) == 0


def test_complete_under_unit_of_work_that_rolls_back_keeps_the_lock(pq):
    put(pq, "M1")
    m = _lock(pq)
    txn = begin()
    lock_complete(token=m.lock_token, transaction_id=txn)
    rollback(txn)
    stored = Message.objects.get(pk=m.pk)
    assert (stored.lock_token, stored.locked_until, stored.get_transaction_id) == (m.lock_token, m.locked_until, None)
    assert stored.backout_count == 0
    assert get(pq).messages == []  # still locked
    assert _depth(pq)["locked"] == 1
    assert lock_complete(token=m.lock_token) == "completed"
    assert Message.objects.filter(queue__name=pq).count() == 0


def test_lock_kept_after_rollback_can_still_expire(pq):
    put(pq, "M1")
    m = _lock(pq)
    txn = begin()
    lock_complete(token=m.lock_token, transaction_id=txn)
    _expire(m.lock_token)
    rollback(txn)
    assert locks_expire() == 1
    assert bodies(get(pq)) == ["M1"]


# --- abandon, renew, dead-letter --------------------------------------------------------------


def test_abandon_makes_the_message_available_at_once(pq):
    put(pq, "M1", "M2")
    m = _lock(pq)
    assert lock_abandon(token=m.lock_token) == "available"
    assert _depth(pq)["locked"] == 0
    again = _lock(pq)
    assert bytes(again.body) == b"M1"
    assert again.delivery_count == 2
    assert again.lock_token != m.lock_token
    with pytest.raises(LockNotFound):
        lock_abandon(token=m.lock_token)


def test_renew_extends_the_lock(lq):
    put(lq, "M1")
    m = _lock(lq)
    soon = timezone.now() + timedelta(milliseconds=200)
    Message.objects.filter(pk=m.pk).update(locked_until=soon)
    before = timezone.now()
    renewed = lock_renew(token=m.lock_token)
    assert renewed.locked_until >= before + timedelta(seconds=5)
    assert Message.objects.get(pk=m.pk).locked_until == renewed.locked_until
    assert Message.objects.get(pk=m.pk).lock_token == m.lock_token


def test_dead_letter_moves_the_message_with_the_reason(pq):
    put(pq, "M1")
    m = _lock(pq)
    moved = lock_dead_letter(token=m.lock_token, reason="cannot parse")
    assert moved.queue.name == DLQ
    assert Message.objects.filter(queue__name=pq).count() == 0
    assert queue_reserved_depth(queue=queue_get(broker=BROKER, name=pq)) == 0
    dead = Message.objects.get(queue__name=DLQ)
    assert bytes(dead.body) == b"M1"
    assert (dead.dead_letter_reason, dead.dead_letter_queue) == ("cannot parse", pq)
    assert (dead.lock_token, dead.locked_until, dead.msg_id) == (None, None, m.msg_id)
    assert bodies(get(DLQ)) == ["M1"]


def test_dead_letter_needs_a_reason(pq):
    put(pq, "M1")
    m = _lock(pq)
    for reason in ("", "   ", None, "x" * 201):
        with pytest.raises(InvalidInput) as exc:  # refused where it enters, through the one definition
            LockDeadLetter.parse({"lock_token": m.lock_token, "reason": reason})
        assert list(exc.value.details["errors"]) == ["reason"]
    assert Message.objects.get(pk=m.pk).lock_token == m.lock_token
    assert LockDeadLetter.parse({"lock_token": m.lock_token, "reason": "  no route \n"}).reason == "no route"


# --- expiry and the delivery limit ----------------------------------------------------------


def test_expired_lock_is_released_by_locks_expire(pq):
    put(pq, "M1")
    m = _lock(pq)
    assert locks_expire() == 0  # not expired yet
    _expire(m.lock_token)
    assert locks_expire() == 1
    assert _depth(pq)["locked"] == 0
    again = _lock(pq)
    assert (bytes(again.body), again.delivery_count) == (b"M1", 2)


@pytest.mark.parametrize("operation", ["complete", "abandon", "renew", "dead_letter"])
def test_operations_on_an_expired_lock_are_lock_lost(pq, operation):
    put(pq, "M1")
    m = _lock(pq)
    _expire(m.lock_token)
    calls = {
        "complete": lambda: lock_complete(token=m.lock_token),
        "abandon": lambda: lock_abandon(token=m.lock_token),
        "renew": lambda: lock_renew(token=m.lock_token),
        "dead_letter": lambda: lock_dead_letter(token=m.lock_token, reason="late"),
    }
    with pytest.raises(LockLost):
        calls[operation]()
    assert Message.objects.get(pk=m.pk).queue.name == pq  # nothing happened to it


def test_complete_under_unit_of_work_on_an_expired_lock_is_lock_lost(pq):
    put(pq, "M1")
    m = _lock(pq)
    _expire(m.lock_token)
    with pytest.raises(LockLost):
        lock_complete(token=m.lock_token, transaction_id=begin())
    assert Message.objects.get(pk=m.pk).get_transaction_id is None


def test_lock_released_by_housekeeping_is_still_lost_for_its_holder(pq):
    """The usual way a lock is lost: it ran out, housekeeping released it (within a second)
    and maybe another consumer locked the message again. The old holder's complete must
    say lock_lost (410), not not_found, and must not touch the new holder's lock."""
    put(pq, "M1")
    old = _lock(pq)
    _expire(old.lock_token)
    assert locks_expire() == 1
    new = _lock(pq)
    with pytest.raises(LockLost):
        lock_complete(token=old.lock_token)
    assert Message.objects.get(pk=new.pk).lock_token == new.lock_token


def test_unknown_token_is_not_found(pq):
    for call in (
        lambda: lock_complete(token="f" * 32),
        lambda: lock_abandon(token="f" * 32),
        lambda: lock_renew(token="f" * 32),
        lambda: lock_dead_letter(token="f" * 32, reason="r"),
    ):
        with pytest.raises(LockNotFound):
            call()


@pytest.fixture
def limited(broker):
    """A queue whose delivery limit (backout threshold) is 2."""
    return queue_define(broker=BROKER, name="QD", backout_threshold=2).name


def test_abandon_at_the_delivery_limit_dead_letters(limited):
    put(limited, "M1")
    first = _lock(limited)
    assert lock_abandon(token=first.lock_token) == "available"
    second = _lock(limited)
    assert second.delivery_count == 2
    assert lock_abandon(token=second.lock_token) == "dead_lettered"
    assert Message.objects.filter(queue__name=limited).count() == 0
    assert queue_reserved_depth(queue=queue_get(broker=BROKER, name=limited)) == 0
    dead = Message.objects.get(queue__name=DLQ)
    assert bytes(dead.body) == b"M1" and dead.dead_letter_queue == limited
    assert "delivery" in dead.dead_letter_reason
    assert dead.lock_token is None


def test_expiry_at_the_delivery_limit_dead_letters(limited):
    put(limited, "M1")
    first = _lock(limited)
    _expire(first.lock_token)
    assert locks_expire() == 1
    assert Message.objects.filter(queue__name=limited).count() == 1
    second = _lock(limited)
    _expire(second.lock_token)
    assert locks_expire() == 1
    assert Message.objects.filter(queue__name=limited).count() == 0
    dead = Message.objects.get(queue__name=DLQ)
    assert bytes(dead.body) == b"M1" and dead.dead_letter_queue == limited
    assert "expired" in dead.dead_letter_reason


def test_no_delivery_limit_never_dead_letters(pq):
    put(pq, "M1")
    for n in range(1, 6):
        m = _lock(pq)
        assert m.delivery_count == n
        assert lock_abandon(token=m.lock_token) == "available"
    assert Message.objects.filter(queue__name=DLQ).count() == 0


# --- REST -----------------------------------------------------------------------------------

Q = f"/api/brokers/{BROKER}/queues/Q1/"


def _rest_lock(api) -> dict:
    r = api.post(Q + "get/", {"mode": "peek_lock"}, format="json")
    assert r.status_code == 200, r.content
    messages = r.json()["messages"]
    assert len(messages) == 1, r.json()
    return messages[0]


def _rest_put(api, *texts):
    for text in texts:
        r = api.post(Q + "messages/", {"body": text}, format="json")
        assert r.status_code == 201, r.content


def test_rest_peek_lock_complete(api, queue):
    _rest_put(api, "M1")
    m = _rest_lock(api)
    assert m["body"] == "M1" and m["delivery_count"] == 1
    assert m["lock_token"] and m["locked_until"]
    detail = api.get(Q).json()
    assert (detail["depth"], detail["locked"]) == (1, 1)
    again = api.post(Q + "get/", {}, format="json").json()
    assert again["messages"] == [] and again["reason"] == "empty"
    r = api.post(f"/api/locks/{m['lock_token']}/complete/", {}, format="json")
    assert r.status_code == 200, r.content
    assert r.json()["outcome"] == "completed"
    assert api.get(Q).json()["depth"] == 0
    assert api.post(f"/api/locks/{m['lock_token']}/complete/").status_code in (404, 410)


def test_rest_complete_under_transaction(api, queue):
    _rest_put(api, "M1", "M2")
    a, b = _rest_lock(api), _rest_lock(api)
    t_commit = api.post(f"/api/brokers/{BROKER}/transactions/", {}, format="json").json()["id"]
    t_back = api.post(f"/api/brokers/{BROKER}/transactions/", {}, format="json").json()["id"]
    r = api.post(f"/api/locks/{a['lock_token']}/complete/", {"transaction": t_commit}, format="json")
    assert r.status_code == 200 and r.json()["outcome"] == "pending_commit", r.content
    r = api.post(f"/api/locks/{b['lock_token']}/complete/", {"transaction": t_back}, format="json")
    assert r.status_code == 200 and r.json()["outcome"] == "pending_commit", r.content
    assert api.post(f"/api/transactions/{t_commit}/commit/", {}, format="json").json()["state"] == "committed"
    assert api.post(f"/api/transactions/{t_back}/rollback/", {}, format="json").json()["state"] == "rolled_back"
    assert [bytes(m.body) for m in Message.objects.filter(queue__name="Q1")] == [b"M2"]
    detail = api.get(Q).json()
    assert (detail["depth"], detail["locked"]) == (1, 1)
    r = api.post(f"/api/locks/{b['lock_token']}/renew/")
    assert r.status_code == 200, r.content


def test_rest_abandon_and_renew(api, queue):
    _rest_put(api, "M1")
    m = _rest_lock(api)
    Message.objects.filter(lock_token=m["lock_token"]).update(locked_until=timezone.now() + timedelta(seconds=1))
    r = api.post(f"/api/locks/{m['lock_token']}/renew/")
    assert r.status_code == 200, r.content
    assert r.json()["lock_token"] == m["lock_token"]
    renewed = Message.objects.get(lock_token=m["lock_token"]).locked_until
    assert renewed >= timezone.now() + timedelta(seconds=25)  # default lock duration 30 s
    r = api.post(f"/api/locks/{m['lock_token']}/abandon/")
    assert r.status_code == 200 and r.json()["outcome"] == "available", r.content
    again = _rest_lock(api)
    assert again["body"] == "M1" and again["delivery_count"] == 2


def test_rest_dead_letter(api, queue):
    _rest_put(api, "M1")
    m = _rest_lock(api)
    _error(api.post(f"/api/locks/{m['lock_token']}/dead-letter/", {}, format="json"), 400, "invalid")
    blank = api.post(f"/api/locks/{m['lock_token']}/dead-letter/", {"reason": " \t"}, format="json")
    assert _error(blank, 400, "invalid")["errors"] == {"reason": ["Must not be blank."]}
    r = api.post(f"/api/locks/{m['lock_token']}/dead-letter/", {"reason": "poison"}, format="json")
    assert r.status_code == 200, r.content
    assert r.json()["outcome"] == "dead_lettered" and r.json()["queue"] == DLQ
    assert api.get(Q).json()["depth"] == 0
    shown = api.get(f"/api/brokers/{BROKER}/queues/{DLQ}/messages/").json()["messages"]
    assert [(s["body"], s["dead_letter_reason"], s["dead_letter_from"]) for s in shown] == [("M1", "poison", "Q1")]


@pytest.mark.parametrize("action", ["complete", "abandon", "renew", "dead-letter"])
def test_rest_expired_lock_is_410_lock_lost(api, queue, action):
    _rest_put(api, "M1")
    m = _rest_lock(api)
    _expire(m["lock_token"])
    body = {"reason": "late"} if action == "dead-letter" else {}  # unknown fields are 400 (issue 11)
    r = api.post(f"/api/locks/{m['lock_token']}/{action}/", body, format="json")
    _error(r, 410, "lock_lost")


@pytest.mark.parametrize("action", ["complete", "abandon", "renew", "dead-letter"])
def test_rest_unknown_lock_is_404_not_found(api, queue, action):
    body = {"reason": "x"} if action == "dead-letter" else {}
    r = api.post(f"/api/locks/{'0' * 32}/{action}/", body, format="json")
    _error(r, 404, "not_found")


def test_rest_peek_lock_with_transaction_is_options_conflict(api, queue):
    _rest_put(api, "M1")
    txn = api.post(f"/api/brokers/{BROKER}/transactions/", {}, format="json").json()["id"]
    _error(api.post(Q + "get/", {"mode": "peek_lock", "transaction": txn}, format="json"), 409, "options_conflict")
    _error(api.post(Q + "get/", {"mode": "peek_lock", "syncpoint": "yes"}, format="json"), 409, "options_conflict")
    assert api.get(Q).json()["locked"] == 0

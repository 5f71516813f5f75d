"""Ordered gets: enforce_order, never skipping, one unit of work at a time holding ordered
messages, rollback putting a message back in its place, ordered + pre-emptive."""

from __future__ import annotations

import pytest

from baton_client.errors import OptionsConflict
from brokers.models import Message
from brokers.services.connections import connection_open
from brokers.services.ordering import REASON_IN_FLIGHT, REASON_UNCOMMITTED
from brokers.services.queues import queue_define
from brokers.services.locks import lock_abandon, locks_expire
from tests.conftest import bodies, msgs
from brokers.services.messages import message_put
from transactions.manager import transaction_commit
from transactions.selectors import transaction_neighbours

from .conftest import BROKER, begin, commit, drain, get, get_bodies, put, rollback

pytestmark = pytest.mark.postgres  # also run on PostgreSQL


def _row(body: str) -> Message:
    return next(m for m in Message.objects.all() if bytes(m.body) == body.encode())


# --- enforce_order ------------------------------------------------------------------------


def test_enforce_order_makes_every_get_ordered(broker):
    queue_define(broker=BROKER, name="QE", enforce_order="yes", delivery_sequence="priority")
    queue_define(broker=BROKER, name="QN", delivery_sequence="priority")
    for q in ("QE", "QN"):
        message_put(broker=BROKER, queue=q, messages=msgs("M1", priority=0))
        txn = begin()
        message_put(broker=BROKER, queue=q, messages=msgs("M2", priority=0), transaction_id=txn)
        message_put(broker=BROKER, queue=q, messages=msgs("M3", priority=9))
    # not asking for order: the enforcing queue is ordered anyway (priority ignored, no skip)
    assert drain("QE") == (["M1"], REASON_UNCOMMITTED)
    assert drain("QE", transaction_id=begin()) == ([], REASON_UNCOMMITTED)
    # the same puts on a queue that does not enforce order: priority, then skip the uncommitted
    assert drain("QN") == (["M3", "M1"], "empty")


def test_enforce_order_over_rest(api, broker):
    r = api.post(f"/api/brokers/{BROKER}/queues/", {"name": "QE", "enforce_order": "yes"}, format="json")
    assert r.status_code == 201, r.content
    assert r.json()["enforce_order"] == "yes"
    put("QE", "M1")
    txn = begin()
    put("QE", "M2", txn=txn)
    put("QE", "M3")
    got = api.post(f"/api/brokers/{BROKER}/queues/QE/get/", {"batch": 5}, format="json")
    assert got.status_code == 200, got.content
    assert [m["body"] for m in got.json()["messages"]] == ["M1"]
    again = api.post(f"/api/brokers/{BROKER}/queues/QE/get/", {}, format="json").json()
    assert again["messages"] == [] and again["reason"] == REASON_UNCOMMITTED


# --- never skip; one unit of work at a time -----------------------------------------------


def test_ordered_get_never_skips_a_message_in_flight(pq):
    put(pq, "M1", "M2", "M3")
    t1 = begin()
    assert get_bodies(pq, ordered=True, transaction_id=t1) == ["M1"]
    # other units of work, and final gets, are told why instead of skipping M1
    for options in ({"transaction_id": begin()}, {}, {"syncpoint": "yes"}, {"batch": 3}):
        result = get(pq, ordered=True, **options)
        assert (result.messages, result.reason) == ([], REASON_IN_FLIGHT), options
    # nothing was taken by those attempts
    assert Message.objects.filter(queue__name=pq, get_transaction__isnull=True).count() == 2
    # an unordered get may take any available message
    assert get_bodies(pq) == ["M2"]


def test_ordered_get_never_skips_a_message_in_flight_in_the_middle(pq):
    put(pq, "M1", "M2", "M3")
    other = begin()
    assert get_bodies(pq, transaction_id=other, msg_id=_row("M2").msg_id) == ["M2"]  # unordered, by id
    assert drain(pq, ordered=True) == (["M1"], REASON_IN_FLIGHT)
    rollback(other)
    assert drain(pq, ordered=True) == (["M2", "M3"], "empty")


def test_one_unit_of_work_takes_a_run_in_order_while_others_wait(pq):
    put(pq, "M1", "M2", "M3", "M4")
    t1, t2 = begin(), begin()
    assert get_bodies(pq, ordered=True, transaction_id=t1) == ["M1"]
    assert get(pq, ordered=True, transaction_id=t2).reason == REASON_IN_FLIGHT
    assert get_bodies(pq, ordered=True, transaction_id=t1) == ["M2"]
    assert get_bodies(pq, ordered=True, transaction_id=t1, batch=1) == ["M3"]
    assert get(pq, ordered=True, transaction_id=t2).reason == REASON_IN_FLIGHT
    commit(t1)
    assert get_bodies(pq, ordered=True, transaction_id=t2) == ["M4"]
    commit(t2)
    assert Message.objects.filter(queue__name=pq).count() == 0


def test_ordered_batch_stops_at_the_first_message_it_may_not_take(pq):
    put(pq, "M1", "M2")
    producer = begin()
    put(pq, "U3", txn=producer)
    put(pq, "M4")
    result = get(pq, ordered=True, batch=10, transaction_id=begin())
    assert bodies(result) == ["M1", "M2"]


def test_rollback_puts_ordered_messages_back_in_their_place(any_order_queue):
    queue, _ = any_order_queue
    put(queue, "M1", "M2", "M3")
    t1 = begin()
    assert get_bodies(queue, ordered=True, transaction_id=t1, batch=2) == ["M1", "M2"]
    rollback(t1)
    t2 = begin()
    result = get(queue, ordered=True, transaction_id=t2, batch=5)
    assert bodies(result) == ["M1", "M2", "M3"]
    assert [m.backout_count for m in result.messages] == [1, 1, 0]


def test_ordered_get_under_a_connection_takes_the_next_ones_in_order(pq):
    """syncpoint yes with a connection: every get joins the connection's unit of work, so the
    same unit of work takes M1 then M2 (it must not be blocked by its own M1)."""
    put(pq, "M1", "M2", "M3")
    conn = connection_open(broker=BROKER, client_name="ordered-reader").connection.conn_id
    first = get(pq, ordered=True, syncpoint="yes", connection_id=conn)
    second = get(pq, ordered=True, syncpoint="yes", connection_id=conn)
    assert bodies(first) == ["M1"]
    assert first.transaction_id is not None
    assert (bodies(second), second.reason, second.transaction_id) == (["M2"], None, first.transaction_id)


def test_peek_locked_head_blocks_ordered_gets_until_unlocked(pq):
    put(pq, "M1", "M2")
    locked = get(pq, mode="peek_lock")
    assert bodies(locked) == ["M1"]
    assert get(pq, ordered=True).reason == REASON_IN_FLIGHT
    lock_abandon(token=locked.messages[0].lock_token)
    assert drain(pq, ordered=True) == (["M1", "M2"], "empty")


def test_ordered_peek_lock_allows_one_locked_ordered_message(pq):
    put(pq, "M1", "M2")
    assert get_bodies(pq, ordered=True, mode="peek_lock") == ["M1"]
    second = get(pq, ordered=True, mode="peek_lock")
    assert (second.messages, second.reason) == ([], REASON_IN_FLIGHT)
    Message.objects.filter(queue__name=pq).update(locked_until="2000-01-01T00:00:00Z")
    assert locks_expire() == 1
    assert drain(pq, ordered=True) == (["M1", "M2"], "empty")


# --- ordered + pre-emptive, ordered + match ----------------------------------------------


def test_ordered_preemptive_on_commit_ordered_queue_is_options_conflict(cq):
    producer = begin()
    put(cq, "U1", txn=producer)
    with pytest.raises(OptionsConflict):
        get(cq, ordered=True, preemptive=True, transaction_id=begin())
    with pytest.raises(OptionsConflict):
        get(cq, ordered=True, preemptive=True, syncpoint="yes")


def test_ordered_preemptive_on_commit_ordered_queue_rest(api, cq):
    txn = api.post(f"/api/brokers/{BROKER}/transactions/", {}, format="json").json()["id"]
    r = api.post(
        f"/api/brokers/{BROKER}/queues/{cq}/get/",
        {"ordered": True, "preemptive": True, "transaction": txn},
        format="json",
    )
    assert r.status_code == 409, r.content
    assert r.json()["code"] == "options_conflict"


def test_enforced_order_with_preemptive_on_commit_ordered_queue_is_options_conflict(broker):
    queue_define(broker=BROKER, name="QEC", read_order="commit", enforce_order="yes")
    with pytest.raises(OptionsConflict):
        get("QEC", preemptive=True, transaction_id=begin())


def test_ordered_get_matching_by_id_is_options_conflict(pq, api):
    put(pq, "M1")
    with pytest.raises(OptionsConflict):
        get(pq, ordered=True, msg_id=_row("M1").msg_id)
    r = api.post(f"/api/brokers/{BROKER}/queues/{pq}/get/", {"ordered": True, "correl_id": "ab" * 24}, format="json")
    assert r.status_code == 409 and r.json()["code"] == "options_conflict", r.content


def test_ordered_preemptive_on_put_ordered_queue_takes_uncommitted_head(pq):
    producer = begin()
    put(pq, "U1", "U2", txn=producer)
    put(pq, "M3")
    consumer = begin()
    # a plain ordered get is told the head is uncommitted
    assert get(pq, ordered=True, transaction_id=begin()).reason == REASON_UNCOMMITTED
    result = get(pq, ordered=True, preemptive=True, transaction_id=consumer, batch=5)
    assert bodies(result) == ["U1", "U2", "M3"]
    upstream, _ = transaction_neighbours(transaction_id=consumer)
    assert upstream == [producer]
    held = transaction_commit(transaction_id=consumer)
    assert held.state == "commit_held" and held.waiting_on == [producer]
    commit(producer)
    assert Message.objects.filter(queue__name=pq).count() == 0


def test_ordered_preemptive_never_takes_its_own_uncommitted_put(pq):
    txn = begin()
    put(pq, "OWN", txn=txn)
    put(pq, "M2")
    result = get(pq, ordered=True, preemptive=True, transaction_id=txn)
    assert (result.messages, result.reason) == ([], REASON_UNCOMMITTED)


def test_ordered_preemptive_rollback_of_consumer_restores_uncommitted_head(pq):
    producer = begin()
    put(pq, "U1", txn=producer)
    put(pq, "M2")
    consumer = begin()
    assert get_bodies(pq, ordered=True, preemptive=True, transaction_id=consumer) == ["U1"]
    other = begin()
    assert get(pq, ordered=True, preemptive=True, transaction_id=other).reason == REASON_IN_FLIGHT
    rollback(consumer)
    assert get_bodies(pq, ordered=True, preemptive=True, transaction_id=other) == ["U1"]


def test_ordered_get_over_rest_reports_why_it_returned_nothing(api, pq):
    url = f"/api/brokers/{BROKER}/queues/{pq}/get/"
    put(pq, "M1", "M2")
    holder = api.post(f"/api/brokers/{BROKER}/transactions/", {}, format="json").json()["id"]
    r = api.post(url, {"ordered": True, "transaction": holder}, format="json")
    assert r.status_code == 200 and [m["body"] for m in r.json()["messages"]] == ["M1"], r.content
    other = api.post(f"/api/brokers/{BROKER}/transactions/", {}, format="json").json()["id"]
    r = api.post(url, {"ordered": True, "transaction": other}, format="json").json()
    assert (r["messages"], r["reason"]) == ([], REASON_IN_FLIGHT)
    r = api.post(url, {"ordered": "true"}, format="json").json()
    assert (r["messages"], r["reason"]) == ([], REASON_IN_FLIGHT)
    r = api.post(url, {"ordered": True, "transaction": holder}, format="json").json()
    assert [m["body"] for m in r["messages"]] == ["M2"]
    r = api.post(url, {"ordered": True, "transaction": other}, format="json").json()
    assert (r["messages"], r["reason"]) == ([], REASON_IN_FLIGHT)
    assert api.post(f"/api/transactions/{holder}/rollback/", {}, format="json").status_code == 200
    r = api.post(url, {"ordered": True, "transaction": other, "batch": 5}, format="json").json()
    assert [(m["body"], m["backout_count"]) for m in r["messages"]] == [("M1", 1), ("M2", 1)]


def test_ordered_get_of_a_message_whose_lock_ran_out_is_an_ordinary_get(pq):
    """A peek-lock ran out: the next get, ordered or not, releases it first (as housekeeping
    would, which then finds nothing), so an ordered get under a unit of work takes it, and
    rolling that back returns it like any rolled-back get (backout count + 1, no lock,
    available at once; no stale lock leaks into the unit of work)."""
    put(pq, "M1")
    locked = get(pq, mode="peek_lock").messages[0]
    Message.objects.filter(pk=locked.pk).update(locked_until="2000-01-01T00:00:00Z")
    txn = begin()
    assert get_bodies(pq, ordered=True, transaction_id=txn) == ["M1"]
    assert locks_expire() == 0
    rollback(txn)
    stored = Message.objects.get(pk=locked.pk)
    assert stored.backout_count == 1
    assert stored.lock_token is None
    assert get_bodies(pq) == ["M1"]  # available at once to an unordered get

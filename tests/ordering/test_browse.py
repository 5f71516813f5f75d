"""Browse with cursors: unordered pages through available messages once; ordered
(reliable) browse follows the read order, shows in-flight and locked messages, stops at
the first uncommitted put on a put-ordered queue; cursors belong to one kind of browse."""

from __future__ import annotations

import base64
import json

import pytest

from baton_client.errors import InvalidInput, NotEmpty
from brokers.models import Message
from brokers.services.queues import queue_alter

from .conftest import BROKER, begin, browse, commit, get, get_bodies, put, rollback

pytestmark = pytest.mark.postgres  # also run on PostgreSQL


def _pages(queue: str, *, ordered: bool, limit: int, cursor: str | None = None):
    pages = []
    for _ in range(50):
        shown, cursor = browse(queue, ordered=ordered, cursor=cursor, limit=limit)
        if not shown:
            return pages, cursor
        pages.append(shown)
    raise AssertionError("browse did not end")


# --- unordered ----------------------------------------------------------------------------


def test_unordered_browse_pages_through_available_messages_exactly_once(pq):
    put(pq, *[f"M{i}" for i in range(1, 8)])
    pages, cursor = _pages(pq, ordered=False, limit=3)
    assert pages == [["M1", "M2", "M3"], ["M4", "M5", "M6"], ["M7"]]
    put(pq, "M8", "M9")
    shown, cursor = browse(pq, ordered=False, cursor=cursor)
    assert shown == ["M8", "M9"]
    assert browse(pq, ordered=False, cursor=cursor)[0] == []
    assert Message.objects.filter(queue__name=pq).count() == 9  # browsing removes nothing


def test_unordered_browse_shows_only_available_messages(pq):
    put(pq, "M1", "M2", "M3", "M4")
    t = begin()
    put(pq, "U5", txn=t)
    assert list(get(pq, transaction_id=begin()).messages)  # M1 in flight
    assert get(pq, mode="peek_lock").messages  # M2 locked
    shown, _ = browse(pq, ordered=False)
    assert shown == ["M3", "M4"]


def test_unordered_browse_skips_expired_messages(pq):
    put(pq, "M1", "M2", "M3")
    Message.objects.filter(queue__name=pq, body=b"M2").update(expires_at="2000-01-01T00:00:00Z")
    assert browse(pq, ordered=False)[0] == ["M1", "M3"]
    assert browse(pq, ordered=True)[0] == ["M1", "M3"]


# --- ordered ------------------------------------------------------------------------------


def test_ordered_browse_on_put_ordered_queue_stops_before_first_uncommitted_put(pq):
    put(pq, "M1")
    t = begin()
    put(pq, "U2", txn=t)
    put(pq, "M3", "M4")
    shown, cursor = browse(pq, ordered=True)
    assert shown == ["M1"]
    assert browse(pq, ordered=True, cursor=cursor)[0] == []  # still waiting on U2
    put(pq, "U5", txn=t)
    commit(t)
    shown, cursor = browse(pq, ordered=True, cursor=cursor)
    assert shown == ["U2", "M3", "M4", "U5"]
    assert browse(pq, ordered=True, cursor=cursor)[0] == []


def test_ordered_browse_on_put_ordered_queue_continues_past_a_rolled_back_put(pq):
    put(pq, "M1")
    t = begin()
    put(pq, "U2", txn=t)
    put(pq, "M3")
    shown, cursor = browse(pq, ordered=True)
    assert shown == ["M1"]
    rollback(t)
    assert browse(pq, ordered=True, cursor=cursor)[0] == ["M3"]


def test_ordered_browse_on_commit_ordered_queue_follows_commit_order(cq):
    put(cq, "M1")
    t = begin()
    put(cq, "U2", txn=t)
    put(cq, "M3")
    shown, cursor = browse(cq, ordered=True)
    assert shown == ["M1", "M3"]  # an uncommitted put has no place yet; nothing waits for it
    commit(t)
    put(cq, "M4")
    shown, cursor = browse(cq, ordered=True, cursor=cursor)
    assert shown == ["U2", "M4"]
    assert browse(cq, ordered=True, cursor=cursor)[0] == []


def test_ordered_browse_pages_with_small_limit(any_order_queue):
    queue, _ = any_order_queue
    put(queue, *[f"M{i}" for i in range(1, 6)])
    pages, _ = _pages(queue, ordered=True, limit=2)
    assert pages == [["M1", "M2"], ["M3", "M4"], ["M5"]]


def test_ordered_browse_shows_in_flight_and_locked_messages(any_order_queue):
    queue, _ = any_order_queue
    put(queue, "M1", "M2", "M3", "M4")
    assert get(queue, transaction_id=begin()).messages  # M1 in flight
    assert get(queue, mode="peek_lock").messages  # M2 locked
    assert browse(queue, ordered=True)[0] == ["M1", "M2", "M3", "M4"]
    assert browse(queue, ordered=False)[0] == ["M3", "M4"]


def test_ordered_browse_does_not_repeat_a_message_whose_get_rolls_back(any_order_queue):
    queue, _ = any_order_queue
    put(queue, "M1", "M2")
    t = begin()
    assert get(queue, transaction_id=t).messages
    shown, cursor = browse(queue, ordered=True)
    assert shown == ["M1", "M2"]
    rollback(t)
    put(queue, "M3")
    assert browse(queue, ordered=True, cursor=cursor)[0] == ["M3"]


# --- cursors ------------------------------------------------------------------------------


def test_cursor_of_one_kind_of_browse_is_invalid_for_another(pq, cq):
    put(pq, "M1")
    put(cq, "M1")
    _, unordered = browse(pq, ordered=False)
    _, ordered_put = browse(pq, ordered=True)
    _, ordered_commit = browse(cq, ordered=True)
    with pytest.raises(InvalidInput):
        browse(pq, ordered=True, cursor=unordered)
    with pytest.raises(InvalidInput):
        browse(pq, ordered=False, cursor=ordered_put)
    with pytest.raises(InvalidInput):
        browse(cq, ordered=True, cursor=ordered_put)  # put-order position on a commit-ordered queue
    with pytest.raises(InvalidInput):
        browse(cq, ordered=False, cursor=ordered_commit)
    with pytest.raises(InvalidInput):
        browse(pq, ordered=True, cursor="not-a-cursor")


def test_cursor_invalid_after_read_order_changes(pq):
    put(pq, "M1")
    _, cursor = browse(pq, ordered=True)
    with pytest.raises(NotEmpty):  # a queue holding messages keeps its read order
        queue_alter(broker=BROKER, name=pq, read_order="commit")
    assert get_bodies(pq) == ["M1"]
    queue_alter(broker=BROKER, name=pq, read_order="commit")
    put(pq, "M2")
    with pytest.raises(InvalidInput):
        browse(pq, ordered=True, cursor=cursor)
    assert browse(pq, ordered=True)[0] == ["M2"]  # committed on a commit-ordered queue: sequenced


def test_browse_over_rest_with_cursor_and_ordered(api, pq):
    url = f"/api/brokers/{BROKER}/queues/{pq}/messages/"
    put(pq, "M1")
    t = begin()
    put(pq, "U2", txn=t)
    put(pq, "M3")
    r = api.get(url, {"ordered": "true"})
    assert r.status_code == 200, r.content
    assert [m["body"] for m in r.json()["messages"]] == ["M1"]
    ordered_cursor = r.json()["cursor"]
    commit(t)
    r = api.get(url, {"ordered": "true", "cursor": ordered_cursor})
    assert [m["body"] for m in r.json()["messages"]] == ["U2", "M3"]

    r = api.get(url, {"limit": 2})
    assert [m["body"] for m in r.json()["messages"]] == ["M1", "U2"]
    unordered_cursor = r.json()["cursor"]
    r = api.get(url, {"cursor": unordered_cursor})
    assert [m["body"] for m in r.json()["messages"]] == ["M3"]

    for params in (
        {"ordered": "true", "cursor": unordered_cursor},
        {"cursor": ordered_cursor},
        {"ordered": "true", "cursor": "%%%"},
        {"ordered": "maybe"},
    ):
        r = api.get(url, params)
        assert r.status_code == 400, (params, r.content)
        assert r.json()["code"] == "invalid", r.json()


def test_forged_cursor_of_the_wrong_shape_is_invalid_not_a_server_error(api, pq):
    url = f"/api/brokers/{BROKER}/queues/{pq}/messages/"
    for payload in ({"after": "x", "by": "id"}, {"by": "id"}, [1, 2], {"after": None, "by": "id"}, "id"):
        cursor = base64.urlsafe_b64encode(json.dumps(payload).encode()).decode().rstrip("=")
        r = api.get(url, {"ordered": "true", "cursor": cursor})
        assert r.status_code == 400, (payload, r.status_code, r.content[:300])
        assert r.json()["code"] == "invalid"

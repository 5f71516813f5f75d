"""A session's single-message puts under the same unit of work to the same queue, waiting
together on its thread, are applied as one step (brokers/api/session.py, ``gather``;
``MessagePut.together``): one database transaction and one journal row, each request still
answered as a put of one, in order. A step that fails is applied again one request at a
time, so each answer is what it would have been alone.

The session's thread is given its frames before it starts, so what waits together is
known; it runs against real transactions (``transactional_db``)."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model

from brokers.services.access import api_token_issue
from brokers.services.brokers import broker_define
from brokers.services.messages import message_get
from brokers.services.queues import queue_define
from transactions.manager import transaction_begin, transaction_commit
from transactions.models import JournalEvent

from brokers.api.session import _Frames
from tests.brokers.api.session_thread import session_thread_run

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def uow(transactional_db):
    broker_define(name="QM1", transaction_timeout_ms=60_000)
    queue_define(broker="QM1", name="Q1")
    queue_define(broker="QM1", name="Q2")
    queue_define(broker="QM1", name="SMALL", max_depth=3)
    return transaction_begin(broker="QM1", timeout_ms=60_000).id


def _applied(frames: list) -> list[dict]:
    """The replies of a session's thread given ``frames`` all at once."""
    return session_thread_run(get_user_model().objects.create_superuser("tester"), frames).replies


def _put(n: int, queue: str, txn: str | None, **more) -> dict:
    return {"id": n, "op": "put", "broker": "QM1", "queue": queue, "body": f"m{n}", "transaction": txn, **more}


def _put_rows(queue: str) -> list[int]:
    return list(JournalEvent.objects.filter(kind="put", queue=queue).order_by("id").values_list("count", flat=True))


def _bodies_committed(txn: str, queue: str) -> list[bytes]:
    transaction_commit(transaction_id=txn)
    return [m.body for m in message_get(broker="QM1", queue=queue, batch=100).messages]


def test_puts_waiting_together_are_one_step_each_answered(uow):
    replies = _applied([_put(n, "Q1", uow) for n in range(5)])
    assert [(r["re"], r["status"], r["body"], r["transaction"]) for r in replies] == [
        (n, 201, f"m{n}", uow) for n in range(5)
    ]
    assert len({r["msg_id"] for r in replies}) == 5
    assert _put_rows("Q1") == [5]
    assert _bodies_committed(uow, "Q1") == [f"m{n}".encode() for n in range(5)]


def test_a_step_that_fails_is_applied_one_request_at_a_time(uow):
    """Five puts on a queue with room for three: the step of five is refused, so each goes
    alone: three are put, the last two refused as they would have been."""
    replies = _applied([_put(n, "SMALL", uow) for n in range(5)])
    assert [(r["re"], r["status"], r.get("code")) for r in replies] == [
        (0, 201, None),
        (1, 201, None),
        (2, 201, None),
        (3, 409, "queue_full"),
        (4, 409, "queue_full"),
    ]
    assert _put_rows("SMALL") == [1, 1, 1]
    assert _bodies_committed(uow, "SMALL") == [b"m0", b"m1", b"m2"]


def test_order_is_kept_and_what_differs_ends_a_group(uow):
    """Another queue, another operation, a frame that is not JSON and a put outside the
    unit of work each end a group; everything is applied, and answered, in the order sent."""
    frames = [
        _put(0, "Q1", uow),
        _put(1, "Q1", uow),
        _put(2, "Q2", uow),
        _put(3, "Q1", uow),
        "not json",
        _put(5, "Q1", uow),
        {"id": 6, "op": "get", "broker": "QM1", "queue": "Q2"},
        _put(7, "Q1", uow),
        _put(8, "Q1", None),
        _put(9, "Q1", uow, dedup_key="k"),
        _put(10, "Q1", uow),
    ]
    replies = _applied(frames)
    assert [(r["re"], r["status"]) for r in replies] == [
        (0, 201),
        (1, 201),
        (2, 201),
        (3, 201),
        (None, 400),
        (5, 201),
        (6, 200),
        (7, 201),
        (8, 201),
        (9, 201),
        (10, 201),
    ]
    assert replies[6]["messages"] == []  # the put on Q2 before it is not committed
    assert _put_rows("Q1") == [2, 1, 1, 1, 1, 1, 1]
    assert sorted(_bodies_committed(uow, "Q1")) == sorted(f"m{n}".encode() for n in (0, 1, 3, 5, 7, 8, 9, 10))


def test_an_auth_is_applied_in_order(uow):
    """A put before the session authenticates is refused, the one after it is put: the user
    a request runs as is the session's when the request's turn comes."""
    key = api_token_issue(username="other", create_user=True, superuser=True)
    frames = [_put(0, "Q1", None), {"id": 1, "op": "auth", "token": key}, _put(2, "Q1", None)]
    replies = session_thread_run(None, frames).replies
    assert [(r["re"], r["status"]) for r in replies] == [(0, 401), (1, 200), (2, 201)]


def _array(*requests: dict) -> _Frames:
    return _Frames(json.dumps(list(requests)))


def test_an_array_frame_is_its_requests_sent_one_after_the_other(uow):
    """``baton.batch``: an array frame's puts go together as those of separate frames do,
    with the frames after it; each is answered on its own, in order."""
    replies = _applied(
        [_array(*(_put(n, "Q1", uow) for n in range(3))), _put(3, "Q1", uow), _array(_put(4, "Q1", uow))]
    )
    assert [(r["re"], r["status"], r["body"]) for r in replies] == [(n, 201, f"m{n}") for n in range(5)]
    assert _put_rows("Q1") == [5]
    assert _bodies_committed(uow, "Q1") == [f"m{n}".encode() for n in range(5)]


def test_an_array_frame_answers_each_bad_request_alone(uow):
    """A request of an array that is not an object, or has no id, or fails, is answered on
    its own; the others are applied; a step that fails goes one request at a time."""
    frames = [
        _array(_put(0, "SMALL", uow), 7, {"op": "put"}, *(_put(n, "SMALL", uow) for n in range(1, 5))),
        _Frames("[]"),
        _Frames("[1,"),
        _put(9, "Q1", uow),
    ]
    replies = _applied(frames)
    assert [(r["re"], r["status"], r.get("code")) for r in replies] == [
        (0, 201, None),
        (None, 400, "invalid"),
        (None, 400, "invalid"),
        (1, 201, None),
        (2, 201, None),
        (3, 409, "queue_full"),
        (4, 409, "queue_full"),
        (None, 400, "invalid"),
        (None, 400, "invalid"),
        (9, 201, None),
    ]
    assert replies[1]["errors"] == {"body": ["Must be an object."]}
    assert replies[2]["errors"] == {"id": ["Required: a number or a string."]}
    assert replies[7]["errors"] == {"body": ["0 requests."]}
    assert _bodies_committed(uow, "SMALL") == [b"m0", b"m1", b"m2"]


def test_an_array_frame_too_long_is_refused_whole(uow, settings):
    settings.BATON_SESSION_MAX_PENDING = 3
    replies = _applied(
        [_array(*(_put(n, "Q1", uow) for n in range(4))), _array(*(_put(n, "Q1", uow) for n in range(4, 7)))]
    )
    assert [(r["re"], r["status"]) for r in replies] == [(None, 400), (4, 201), (5, 201), (6, 201)]
    assert replies[0]["errors"] == {"body": ["4 requests."]}
    assert _bodies_committed(uow, "Q1") == [b"m4", b"m5", b"m6"]


def test_an_auth_in_an_array_frame_holds_for_the_requests_after_it(uow):
    key = api_token_issue(username="other", create_user=True, superuser=True)
    frames = [_array(_put(0, "Q1", None), {"id": 1, "op": "auth", "token": key}, _put(2, "Q1", None))]
    replies = session_thread_run(None, frames).replies
    assert [(r["re"], r["status"]) for r in replies] == [(0, 401), (1, 200), (2, 201)]

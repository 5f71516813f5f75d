"""Fixtures and helpers for the read-order, ordered-get, browse and peek-lock tests.

``pq`` is a put-ordered queue (QM1/Q1, the default read order), ``cq`` a commit-ordered
one (QM1/QC); both use the same broker. The helpers call the services directly and
return bodies as strings so that assertions read as the scenarios they check."""

from __future__ import annotations

import pytest

from brokers.services.messages import message_browse, message_get, message_put
from brokers.services.queues import queue_define
from tests.conftest import bodies, msgs
from transactions.manager import transaction_begin, transaction_commit, transaction_rollback

BROKER = "QM1"


@pytest.fixture
def pq(queue):
    """A put-ordered queue."""
    assert queue.read_order == "put"
    return queue.name


@pytest.fixture
def cq(broker):
    """A commit-ordered queue."""
    return queue_define(broker=BROKER, name="QC", read_order="commit").name


@pytest.fixture(params=["put", "commit"])
def any_order_queue(request, broker):
    """One queue of each read order, in turn: (name, read_order)."""
    name = f"QO.{request.param.upper()}"
    queue_define(broker=BROKER, name=name, read_order=request.param)
    return name, request.param


def begin() -> str:
    return transaction_begin(broker=BROKER, timeout_ms=60_000).id


def commit(txn: str) -> None:
    assert transaction_commit(transaction_id=txn).state == "committed"


def rollback(txn: str) -> None:
    transaction_rollback(transaction_id=txn)


def put(queue: str, *texts: str, txn: str | None = None) -> None:
    message_put(broker=BROKER, queue=queue, messages=msgs(*texts), transaction_id=txn)


def get(queue: str, **options):
    return message_get(broker=BROKER, queue=queue, **options)


def get_bodies(queue: str, **options) -> list[str]:
    return bodies(get(queue, **options))


def drain(queue: str, **options) -> tuple[list[str], str | None]:
    """Get one message at a time (final gets unless options say otherwise) until a get
    comes back empty; return the bodies in the order gotten and the empty get's reason."""
    got: list[str] = []
    for _ in range(100):
        result = get(queue, **options)
        if not result.messages:
            return got, result.reason
        got.extend(bodies(result))
    raise AssertionError("drain did not end")


def browse(queue: str, *, ordered: bool, cursor: str | None = None, limit: int = 50) -> tuple[list[str], str]:
    result = message_browse(broker=BROKER, queue=queue, ordered=ordered, cursor=cursor, limit=limit)
    return [bytes(m.body).decode() for m in result.messages], result.cursor

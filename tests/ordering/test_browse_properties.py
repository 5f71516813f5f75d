"""Reliable (ordered) browse never misses and never repeats a committed message, and never
shows a rolled-back one.

* A Hypothesis model test: random sequences of immediate puts, transactional puts,
  commits, rollbacks and browses (with random page sizes), run in one thread.
* A randomized concurrent test (fixed seeds): committer threads put and commit or roll back
  in random interleavings while a browser thread keeps browsing with its cursor."""

from __future__ import annotations

import itertools
import random
import threading
from collections import Counter

import pytest
from django.db import connection
from hypothesis import HealthCheck, given, settings, strategies as st

from brokers.models import Message
from brokers.services.brokers import broker_define
from brokers.services.queues import queue_define
from tests.passes import examples

from .conftest import BROKER, begin, browse, commit, put, rollback

pytestmark = pytest.mark.postgres  # also run on PostgreSQL


def _read_order_bodies(queue: str, read_order: str) -> list[str]:
    key = "commit_seq" if read_order == "commit" else "id"
    rows = Message.objects.filter(queue__broker__name=BROKER, queue__name=queue).order_by(key)
    return [bytes(m.body).decode() for m in rows]


def _browse_to_end(queue: str, cursor: str | None, seen: list[str], limit: int = 7) -> str | None:
    for _ in range(10_000):
        shown, cursor = browse(queue, ordered=True, cursor=cursor, limit=limit)
        seen.extend(shown)
        if not shown:
            return cursor
    raise AssertionError("browse did not end")


# --- Hypothesis model test (one thread) ---------------------------------------------------

_names = itertools.count()

operation = st.one_of(
    st.tuples(st.just("put_now"), st.integers(1, 3)),
    st.tuples(st.just("begin")),
    st.tuples(st.just("put_txn"), st.integers(0, 3), st.integers(1, 2)),
    st.tuples(st.just("commit"), st.integers(0, 3)),
    st.tuples(st.just("rollback"), st.integers(0, 3)),
    st.tuples(st.just("browse"), st.integers(1, 4)),
)


@pytest.mark.parametrize("read_order", ["put", "commit"])
@settings(
    max_examples=examples(40, postgres=15),
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(ops=st.lists(operation, max_size=30), finish=st.lists(st.booleans(), min_size=4, max_size=4))
def test_ordered_browse_model(broker, read_order, ops, finish):
    queue = f"QH.{read_order}.{next(_names)}"
    queue_define(broker=BROKER, name=queue, read_order=read_order)
    open_txns: list[str] = []
    pending: dict[str, list[str]] = {}
    committed: list[str] = []
    rolled_back: set[str] = set()
    seen: list[str] = []
    cursor = None
    counter = itertools.count()

    def bodies_new(n):
        return [f"m{next(counter)}" for _ in range(n)]

    for op in ops:
        kind = op[0]
        if kind == "put_now":
            new = bodies_new(op[1])
            put(queue, *new)
            committed.extend(new)
        elif kind == "begin":
            txn = begin()
            open_txns.append(txn)
            pending[txn] = []
        elif kind == "put_txn" and open_txns:
            txn = open_txns[op[1] % len(open_txns)]
            new = bodies_new(op[2])
            put(queue, *new, txn=txn)
            pending[txn].extend(new)
        elif kind in ("commit", "rollback") and open_txns:
            txn = open_txns.pop(op[1] % len(open_txns))
            if kind == "commit":
                commit(txn)
                committed.extend(pending.pop(txn))
            else:
                rollback(txn)
                rolled_back.update(pending.pop(txn))
        elif kind == "browse":
            shown, cursor = browse(queue, ordered=True, cursor=cursor, limit=op[1])
            seen.extend(shown)
    for txn, keep in zip(list(open_txns), finish):
        if keep:
            commit(txn)
            committed.extend(pending.pop(txn))
        else:
            rollback(txn)
            rolled_back.update(pending.pop(txn))
    for txn in open_txns[len(finish) :]:  # more open than finish flags: roll back
        rollback(txn)
        rolled_back.update(pending.pop(txn, []))
    _browse_to_end(queue, cursor, seen, limit=3)
    assert not set(seen) & rolled_back
    assert Counter(seen) == Counter(committed)
    assert seen == _read_order_bodies(queue, read_order)


# --- concurrent committers and a browser --------------------------------------------------

COMMITTERS = 3
ACTIONS = 12


def _committer(queue: str, rng: random.Random, name: str, record: dict, start: threading.Barrier) -> None:
    counter = itertools.count()
    start.wait(timeout=30)
    for _ in range(ACTIONS):
        choice = rng.random()
        if choice < 0.3:
            new = [f"{name}-{next(counter)}" for _ in range(rng.randint(1, 2))]
            put(queue, *new)
            record["committed"].extend(new)
            continue
        txn = begin()
        mine: list[str] = []
        for _ in range(rng.randint(1, 3)):
            new = [f"{name}-{next(counter)}" for _ in range(rng.randint(1, 2))]
            put(queue, *new, txn=txn)
            mine.extend(new)
            if rng.random() < 0.3:  # an immediate put while the unit of work is open
                now = f"{name}-{next(counter)}"
                put(queue, now)
                record["committed"].append(now)
        if rng.random() < 0.7:
            commit(txn)
            record["committed"].extend(mine)
        else:
            rollback(txn)
            record["rolled_back"].extend(mine)


def _in_thread(target, errors: list, *args) -> threading.Thread:
    def run():
        try:
            target(*args)
        except BaseException as exc:  # reported by the test
            errors.append(exc)
        finally:
            connection.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("read_order", ["put", "commit"])
@pytest.mark.parametrize("seed", [11, 22, 33])
def test_ordered_browse_with_concurrent_committers(transactional_db, read_order, seed):
    broker_define(name=BROKER, transaction_timeout_ms=60_000)
    queue = f"QB.{read_order}"
    queue_define(broker=BROKER, name=queue, read_order=read_order)
    rng = random.Random(seed)
    errors: list = []
    records = [{"committed": [], "rolled_back": []} for _ in range(COMMITTERS)]
    start = threading.Barrier(COMMITTERS + 1)
    done = threading.Event()
    seen: list[str] = []
    browses = [0]

    def browser():
        cursor = None
        start.wait(timeout=30)
        while not done.is_set():
            shown, cursor = browse(queue, ordered=True, cursor=cursor, limit=rng_browser.randint(1, 4))
            seen.extend(shown)
            browses[0] += 1
        _browse_to_end(queue, cursor, seen)  # the final browse, after every committer finished

    rng_browser = random.Random(seed * 7)
    committers = [
        _in_thread(_committer, errors, queue, random.Random(rng.random()), f"c{i}", records[i], start)
        for i in range(COMMITTERS)
    ]
    reader = _in_thread(browser, errors)
    for thread in committers:
        thread.join(timeout=60)
        assert not thread.is_alive(), "a committer did not finish"
    done.set()
    reader.join(timeout=60)
    assert not reader.is_alive(), "the browser did not finish"
    assert not errors, errors

    committed = [b for r in records for b in r["committed"]]
    rolled_back = {b for r in records for b in r["rolled_back"]}
    assert committed, "nothing was committed: the test exercised nothing"
    assert browses[0] > 0
    assert not set(seen) & rolled_back, "the browser saw a rolled-back message"
    counts = Counter(seen)
    missed = set(committed) - set(counts)
    repeated = {b: n for b, n in counts.items() if n > 1}
    assert not missed and not repeated, (missed, repeated)
    assert Counter(seen) == Counter(committed)
    assert seen == _read_order_bodies(queue, read_order)

"""Read order put | commit: which message comes next for eager (unordered) gets, ordered
gets and ordered browses, while two units of work put and commit in an interleaving."""

from __future__ import annotations

import pytest

from brokers.models import Message
from brokers.services.ordering import REASON_UNCOMMITTED

from .conftest import begin, browse, commit, drain, put

pytestmark = pytest.mark.postgres  # also run on PostgreSQL

UNCOMMITTED = REASON_UNCOMMITTED


def _disclosure(queue: str, reader):
    """A puts A1, B puts B1, A puts A2, A commits, B puts B2, B commits; after each step
    the reader runs. Returns what it saw after each step."""
    a, b = begin(), begin()
    steps = [
        lambda: put(queue, "A1", txn=a),
        lambda: put(queue, "B1", txn=b),
        lambda: put(queue, "A2", txn=a),
        lambda: commit(a),
        lambda: put(queue, "B2", txn=b),
        lambda: commit(b),
    ]
    seen = []
    for step in steps:
        step()
        seen.append(reader(queue))
    return seen


STEPS = ["A puts A1", "B puts B1", "A puts A2", "A commits", "B puts B2", "B commits"]

EXPECTED_GETS = {
    # (read order, ordered reader?) -> after each step: (bodies gotten, reason of the empty get that ended it)
    ("put", False): [([], "empty")] * 3 + [(["A1", "A2"], "empty"), ([], "empty"), (["B1", "B2"], "empty")],
    ("put", True): [([], UNCOMMITTED)] * 3 + [(["A1"], UNCOMMITTED), ([], UNCOMMITTED), (["B1", "A2", "B2"], "empty")],
    ("commit", False): [([], "empty")] * 3 + [(["A1", "A2"], "empty"), ([], "empty"), (["B1", "B2"], "empty")],
    ("commit", True): [([], "empty")] * 3 + [(["A1", "A2"], "empty"), ([], "empty"), (["B1", "B2"], "empty")],
}


@pytest.mark.parametrize("ordered", [False, True], ids=["eager", "ordered"])
def test_disclosure_sequence_final_gets(any_order_queue, ordered):
    queue, read_order = any_order_queue
    seen = _disclosure(queue, lambda q: drain(q, ordered=ordered))
    assert dict(zip(STEPS, seen)) == dict(zip(STEPS, EXPECTED_GETS[(read_order, ordered)]))


@pytest.mark.parametrize("ordered", [False, True], ids=["eager", "ordered"])
def test_disclosure_sequence_gets_under_one_unit_of_work(any_order_queue, ordered):
    """The same reader, but taking everything under one unit of work that it commits at the
    end: a run of in-order messages held by the reader's own unit of work does not block it."""
    queue, read_order = any_order_queue
    reader_txn = begin()
    seen = _disclosure(queue, lambda q: drain(q, ordered=ordered, transaction_id=reader_txn))
    assert dict(zip(STEPS, seen)) == dict(zip(STEPS, EXPECTED_GETS[(read_order, ordered)]))
    commit(reader_txn)
    assert Message.objects.filter(queue__name=queue).count() == 0


def test_disclosure_sequence_ordered_browse(any_order_queue):
    queue, read_order = any_order_queue
    cursor = [None]

    def reader(q):
        shown, cursor[0] = browse(q, ordered=True, cursor=cursor[0])
        return shown

    seen = _disclosure(queue, reader)
    if read_order == "put":
        expected = [[], [], [], ["A1"], [], ["B1", "A2", "B2"]]
    else:
        expected = [[], [], [], ["A1", "A2"], [], ["B1", "B2"]]
    assert dict(zip(STEPS, seen)) == dict(zip(STEPS, expected))
    # browsing never removed anything
    assert Message.objects.filter(queue__name=queue).count() == 4


def _later_begun_commits_first(queue: str) -> None:
    a = begin()
    put(queue, "X1", txn=a)
    b = begin()
    put(queue, "Y1", txn=b)
    put(queue, "I1")  # an immediate put: committed at once
    put(queue, "Y2", txn=b)
    commit(b)
    put(queue, "I2")
    commit(a)


COMMIT_ORDER = ["I1", "Y1", "Y2", "I2", "X1"]
PUT_ORDER = ["X1", "Y1", "I1", "Y2", "I2"]


def test_commit_sequences_follow_commit_order(any_order_queue):
    queue, read_order = any_order_queue
    _later_begun_commits_first(queue)
    if read_order == "put":  # only a commit-ordered queue's commits write commit sequences
        assert [bytes(r.body).decode() for r in Message.objects.filter(queue__name=queue).order_by("id")] == PUT_ORDER
        return
    rows = list(Message.objects.filter(queue__name=queue).order_by("commit_seq"))
    seqs = [r.commit_seq for r in rows]
    assert None not in seqs and len(set(seqs)) == len(seqs)
    assert [bytes(r.body).decode() for r in rows] == COMMIT_ORDER
    assert [bytes(r.body).decode() for r in Message.objects.filter(queue__name=queue).order_by("id")] == PUT_ORDER


@pytest.mark.parametrize("how", ["eager", "ordered", "ordered_batch", "ordered_browse"])
def test_later_begun_unit_of_work_committing_first(any_order_queue, how):
    queue, read_order = any_order_queue
    _later_begun_commits_first(queue)
    expected = COMMIT_ORDER if read_order == "commit" else PUT_ORDER
    if how == "ordered_browse":
        first, cursor = browse(queue, ordered=True, limit=2)
        rest, _ = browse(queue, ordered=True, cursor=cursor)
        assert first + rest == expected
    elif how == "ordered_batch":
        got, reason = drain(queue, ordered=True, batch=3)
        assert (got, reason) == (expected, "empty")
    else:
        got, reason = drain(queue, ordered=how == "ordered")
        assert (got, reason) == (expected, "empty")

"""A Hypothesis state machine for linked transactions: random puts, ordinary and
pre-emptive gets, commits and rollbacks against a plain in-memory model.

The model knows nothing of the implementation. Messages are dicts in put order on one FIFO
queue: ``put`` (the unit of work whose put is uncommitted, or None), ``get`` (the unit of
work holding it, or None), ``backouts``. Links are pairs (producer, consumer). Commit
semantics in the model: among the transactions that have asked to commit, the largest set
whose every upstream is committed or in the set commits (a fixpoint); rollback backs out
every transaction downstream, transitively.

After every step: each transaction's state, the queue's contents (put/get side, backout
counts) and the ledger of committed consumption must agree with the model; no committed
consumer ever holds a rolled-back message; every message of a committed producer is
consumed at most once; nothing is lost.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from brokers.models import Message, put_open_flag, put_units_open_only
from brokers.services.brokers import broker_define
from brokers.services.message_input import MessageInput
from brokers.services.messages import message_get, message_put
from brokers.services.queues import queue_define
from baton_client.errors import TransactionBackedOut
from transactions.manager import transaction_begin, transaction_commit, transaction_rollback
from transactions.models import Transaction
from tests.passes import examples

pytestmark = pytest.mark.linked

_names = itertools.count(1)
MAX_TXNS = 4


class LinkedMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.broker = f"LM{next(_names)}"
        broker_define(name=self.broker, transaction_timeout_ms=600_000)
        queue_define(broker=self.broker, name="Q", delivery_sequence="fifo", max_depth=100_000)
        self.messages: list[dict] = []  # in put order
        self.txns: dict[str, str] = {}  # id → active | requested | committed | rolled_back
        self.order: list[str] = []  # transaction ids in begin order (for rules to pick from)
        self.links: set[tuple[str, str]] = set()
        self.consumed: list[str] = []  # bodies consumed by committed transactions (and final gets)
        self.produced: dict[str, str] = {}  # body → producer transaction id (None: immediate)
        self.bodies = itertools.count(1)

    # --- helpers -----------------------------------------------------------------------

    def _open(self) -> list[str]:
        return [t for t in self.order if self.txns[t] in ("active", "requested")]

    def _active(self) -> list[str]:
        return [t for t in self.order if self.txns[t] == "active"]

    def _eligible(self, txn: str | None, preemptive: bool) -> list[dict]:
        return [m for m in self.messages if m["get"] is None and (m["put"] is None or (preemptive and m["put"] != txn))]

    def _commit_fixpoint(self) -> set[str]:
        group = {t for t, s in self.txns.items() if s == "requested"}
        changed = True
        while changed:
            changed = False
            for t in list(group):
                ups = {u for u, d in self.links if d == t}
                if any(self.txns[u] != "committed" and u not in group for u in ups):
                    group.discard(t)
                    changed = True
        return group

    def _apply_commit(self, group: set[str]) -> None:
        for t in group:
            self.txns[t] = "committed"
        kept = []
        for m in self.messages:
            if m["get"] in group:
                self.consumed.append(m["body"])
                continue  # removed (never available if its put was in the group too)
            if m["put"] in group:
                m["put"] = None
            kept.append(m)
        self.messages = kept

    def _apply_rollback(self, root: str) -> list[str]:
        cascade, frontier = [], [root]
        while frontier:
            nxt = [
                d
                for u, d in self.links
                if u in frontier and self.txns[d] in ("active", "requested") and d not in cascade and d != root
            ]
            cascade.extend(dict.fromkeys(nxt))
            frontier = nxt
        doomed = {root, *cascade}
        for t in doomed:
            self.txns[t] = "rolled_back"
        kept = []
        for m in self.messages:
            if m["put"] in doomed:
                continue
            if m["get"] in doomed:
                m["get"] = None
                m["backouts"] += 1
            kept.append(m)
        self.messages = kept
        self.links = {(u, d) for u, d in self.links if d not in doomed}
        return cascade

    # --- rules -------------------------------------------------------------------------

    @initialize(producers=st.integers(1, 2), consumers=st.integers(1, 2), puts=st.integers(1, 3))
    def start(self, producers: int, consumers: int, puts: int) -> None:
        """Every run starts with open producers holding uncommitted puts and open consumers,
        so that links, held commits and cascades come up in most runs."""
        for _ in range(producers + consumers):
            self.begin()
        for producer in self.order[:producers]:
            bodies = [f"m{next(self.bodies)}" for _ in range(puts)]
            message_put(
                broker=self.broker,
                queue="Q",
                messages=[MessageInput(body=b.encode()) for b in bodies],
                transaction_id=producer,
            )
            for b in bodies:
                self.messages.append({"body": b, "put": producer, "get": None, "backouts": 0})
                self.produced[b] = producer

    @precondition(lambda self: len(self._open()) < MAX_TXNS)
    @rule()
    def begin(self) -> None:
        txn = transaction_begin(broker=self.broker, timeout_ms=600_000).id
        self.txns[txn] = "active"
        self.order.append(txn)

    @rule(data=st.data(), count=st.integers(1, 2))
    def put(self, data, count: int) -> None:
        choices = [None, *self._active()]
        txn = data.draw(st.sampled_from(choices), label="producer")
        bodies = [f"m{next(self.bodies)}" for _ in range(count)]
        message_put(
            broker=self.broker, queue="Q", messages=[MessageInput(body=b.encode()) for b in bodies], transaction_id=txn
        )
        for b in bodies:
            self.messages.append({"body": b, "put": txn, "get": None, "backouts": 0})
            self.produced[b] = txn

    @precondition(lambda self: bool(self._active()))
    @rule(data=st.data())
    def preemptive_get(self, data) -> None:
        self.get(data, True)

    @rule(data=st.data(), preemptive=st.booleans())
    def get(self, data, preemptive: bool) -> None:
        active = self._active()
        txn = data.draw(
            st.sampled_from([None, *active])
            if not preemptive and active
            else st.sampled_from(active)
            if active
            else st.just(None),
            label="consumer",
        )
        if txn is None:
            preemptive = False
        expected = self._eligible(txn, preemptive)[:1]
        got = message_get(broker=self.broker, queue="Q", transaction_id=txn, preemptive=preemptive)
        assert [bytes(m.body).decode() for m in got.messages] == [m["body"] for m in expected]
        for m in expected:
            if txn is None:
                self.messages.remove(m)
                self.consumed.append(m["body"])
            else:
                m["get"] = txn
                if m["put"] is not None:
                    self.links.add((m["put"], txn))

    @precondition(lambda self: bool(self._active()))
    @rule(data=st.data())
    def commit(self, data) -> None:
        txn = data.draw(st.sampled_from(self._active()), label="commit")
        outcome = transaction_commit(transaction_id=txn)
        self.txns[txn] = "requested"
        group = self._commit_fixpoint()
        self._apply_commit(group)
        event(f"commit resolving {min(len(group), 3)} transactions" if group else "commit held")
        assert outcome.state == ("committed" if txn in group else "commit_held")

    @precondition(lambda self: bool(self._open()))
    @rule(data=st.data())
    def rollback(self, data) -> None:
        txn = data.draw(st.sampled_from(self._open()), label="rollback")
        self._rollback(txn)

    def _producers(self) -> list[str]:
        return [t for t in self._open() if any(u == t for u, _ in self.links)]

    @precondition(lambda self: bool(self._producers()))
    @rule(data=st.data())
    def rollback_producer(self, data) -> None:
        """Roll back a transaction that others consumed from (so the cascade is exercised)."""
        self._rollback(data.draw(st.sampled_from(self._producers()), label="rollback producer"))

    def _rollback(self, txn: str) -> None:
        outcome = transaction_rollback(transaction_id=txn)
        cascade = self._apply_rollback(txn)
        event(f"rollback cascading to {min(len(cascade), 2)} transactions")
        assert sorted(outcome.cascaded) == sorted(cascade)
        with pytest.raises(TransactionBackedOut):
            transaction_commit(transaction_id=txn)

    # --- invariants --------------------------------------------------------------------

    @invariant()
    def states_agree(self) -> None:
        actual = dict(Transaction.objects.filter(pk__in=list(self.txns)).values_list("pk", "state"))
        expected = {t: {"requested": "commit_held"}.get(s, s) for t, s in self.txns.items()}
        assert actual == expected

    @invariant()
    def queue_agrees(self) -> None:
        # the put's unit of work while the put is uncommitted (a commit leaves the rows as they are)
        rows = put_units_open_only(
            list(
                Message.objects.filter(queue__broker__name=self.broker, queue__name="Q")
                .annotate(put_open=put_open_flag())
                .order_by("id")
            )
        )
        actual = [(bytes(m.body).decode(), m.put_transaction_id, m.get_transaction_id, m.backout_count) for m in rows]
        assert actual == [(m["body"], m["put"], m["get"], m["backouts"]) for m in self.messages]

    @invariant()
    def consumption_is_exact(self) -> None:
        # at most once, only from committed (or immediate) producers, and nothing lost
        assert len(self.consumed) == len(set(self.consumed))
        for body in self.consumed:
            producer = self.produced[body]
            assert producer is None or self.txns[producer] == "committed", body
        on_queue = {m["body"] for m in self.messages}
        for body, producer in self.produced.items():
            if producer is None or self.txns[producer] == "committed":
                assert body in on_queue or body in self.consumed, f"{body} was lost"


def test_linked_transactions_agree_with_model(db):
    run_state_machine_as_test(
        LinkedMachine,
        settings=settings(
            max_examples=examples(80, postgres=20),
            stateful_step_count=30,
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )

"""A Hypothesis state machine against a plain in-memory model of queues and units of work.

The model is a dict of queues, each a list of message dicts in put-sequence order:
``body``, ``priority``, ``seq`` (put order, also for a move to a backout queue), ``put``
(the id of the unit of work whose put is uncommitted, or None), ``get`` (the id of the
unit of work that has it in flight, or None), ``backouts`` and ``origin`` (the queue it
was moved from). It knows nothing of the implementation; after every step the engine must
agree with it on depths (``queue_depths``), on the exact contents and order of a full
browse (available messages only, in put order: uncommitted puts and in-flight gets are
invisible), on backout counts and dead-letter origins, and on the room left under max depth
(probed with puts inside a savepoint that is undone); every get must return exactly the
messages, in exactly the order, that the model says.

Each example runs on its own broker inside a savepoint that teardown rolls back.
"""

from __future__ import annotations

import itertools

import pytest
from django.db import transaction as db
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

from baton_client.errors import QueueFull
from brokers.models import DEFAULT_DEAD_LETTER_QUEUE, Queue
from brokers.selectors import queue_depths
from brokers.services.brokers import broker_define
from brokers.services.message_input import MessageInput
from brokers.services.messages import message_browse, message_get, message_put
from brokers.services.queues import queue_define
from transactions.manager import transaction_begin, transaction_commit, transaction_rollback
from transactions.models import Transaction, TransactionState
from tests.passes import examples

DLQ = DEFAULT_DEAD_LETTER_QUEUE
#: name → (delivery sequence, max depth, backout threshold, backout queue)
QUEUES = {
    "PRIO": ("priority", 5, 1, "BOQ"),  # moves to its backout queue at the first backout
    "FIFO": ("fifo", 5, 2, ""),  # moves to the dead-letter queue at 2 backouts
    "PLAIN": ("priority", 4, 0, ""),  # never moves
    "BOQ": ("fifo", 5000, 0, ""),
    DLQ: ("priority", 999_999_999, 0, ""),  # as broker_define makes it
}
PUT_QUEUES = ["PRIO", "FIFO", "PLAIN"]
#: gets mostly go where puts go
GET_QUEUES = ["FIFO", "PRIO", "FIFO", "PRIO", "PLAIN", "BOQ", DLQ]
MAX_OPEN = 2

_broker_names = itertools.count(1)


class QueueMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.savepoint = db.savepoint()
        self.broker = f"SM{next(_broker_names)}"
        broker_define(name=self.broker, transaction_timeout_ms=600_000)
        self.queue_ids = {DLQ: Queue.objects.get(broker__name=self.broker, name=DLQ).pk}
        for name, (sequence, max_depth, threshold, backout_queue) in QUEUES.items():
            if name == DLQ:
                continue
            q = queue_define(
                broker=self.broker,
                name=name,
                delivery_sequence=sequence,
                max_depth=max_depth,
                backout_threshold=threshold,
                backout_queue=backout_queue,
            )
            self.queue_ids[name] = q.pk
        # the model
        self.queues: dict[str, list[dict]] = {name: [] for name in QUEUES}
        self.open: list[str] = []
        self.touched: set[str] = set(QUEUES)  # queues changed since the last room check
        self.seq = itertools.count()
        self.bodies = itertools.count()

    def teardown(self) -> None:
        db.savepoint_rollback(self.savepoint)

    # --- the model's rules ---------------------------------------------------------

    def _available(self, name: str) -> list[dict]:
        avail = [m for m in self.queues[name] if m["put"] is None and m["get"] is None]
        if QUEUES[name][0] == "priority":
            return sorted(avail, key=lambda m: (-m["priority"], m["seq"]))
        return sorted(avail, key=lambda m: m["seq"])

    def _txn(self, index: int) -> str:
        return self.open[index % len(self.open)]

    def _put(self, queue: str, priorities: list[int], txn: str | None) -> None:
        self.touched.add(queue)
        bodies = [f"m{next(self.bodies)}" for _ in priorities]
        inputs = [MessageInput(body=b.encode(), priority=p) for b, p in zip(bodies, priorities)]
        fits = len(self.queues[queue]) + len(inputs) <= QUEUES[queue][1]
        if not fits:
            with pytest.raises(QueueFull):
                message_put(broker=self.broker, queue=queue, messages=inputs, transaction_id=txn)
            return
        result = message_put(broker=self.broker, queue=queue, messages=inputs, transaction_id=txn)
        assert [bytes(m.body).decode() for m in result.messages] == bodies
        assert result.transaction_id == txn
        for body, priority in zip(bodies, priorities):
            self.queues[queue].append(
                {
                    "body": body,
                    "priority": priority,
                    "seq": next(self.seq),
                    "put": txn,
                    "get": None,
                    "backouts": 0,
                    "origin": "",
                }
            )

    def _get(self, queue: str, batch: int, txn: str | None) -> None:
        self.touched.add(queue)
        expected = self._available(queue)[:batch]
        result = message_get(broker=self.broker, queue=queue, batch=batch, transaction_id=txn)
        got = [(bytes(m.body).decode(), m.backout_count, m.priority) for m in result.messages]
        assert got == [(m["body"], m["backouts"], m["priority"]) for m in expected]
        if not expected:
            assert result.reason == "empty"
        for m in expected:
            if txn is None:
                self.queues[queue].remove(m)
            else:
                m["get"] = txn

    # --- rules -----------------------------------------------------------------------

    @initialize(
        prefill=st.lists(st.tuples(st.sampled_from(PUT_QUEUES), st.integers(0, 9)), max_size=8),
        begun=st.integers(0, MAX_OPEN),
    )
    def start(self, prefill: list[tuple[str, int]], begun: int) -> None:
        """Start from queues with some committed messages and some units of work open."""
        for queue, priority in prefill:
            self._put(queue, [priority], None)
        for _ in range(begun):
            self.begin()

    @precondition(lambda self: len(self.open) < MAX_OPEN)
    @rule()
    def begin(self) -> None:
        txn = transaction_begin(broker=self.broker, timeout_ms=600_000)
        self.open.append(txn.id)

    @rule(queue=st.sampled_from(PUT_QUEUES), priorities=st.lists(st.integers(0, 9), min_size=1, max_size=3))
    def put_immediate(self, queue: str, priorities: list[int]) -> None:
        self._put(queue, priorities, None)

    @precondition(lambda self: self.open)
    @rule(
        queue=st.sampled_from(PUT_QUEUES),
        priorities=st.lists(st.integers(0, 9), min_size=1, max_size=3),
        index=st.integers(0, MAX_OPEN - 1),
    )
    def put_in_transaction(self, queue: str, priorities: list[int], index: int) -> None:
        self._put(queue, priorities, self._txn(index))

    @rule(data=st.data(), batch=st.integers(1, 3), index=st.none() | st.integers(0, MAX_OPEN - 1))
    def get(self, data, batch: int, index: int | None) -> None:
        """Get immediately (index None) or under one of the open units of work, mostly from
        a queue that has something to get."""
        stocked = [name for name in QUEUES if self._available(name)]
        if stocked and data.draw(st.booleans(), label="from a stocked queue"):
            queue = data.draw(st.sampled_from(stocked), label="queue")
        else:
            queue = data.draw(st.sampled_from(GET_QUEUES), label="queue")
        self._get(queue, batch, None if index is None or not self.open else self._txn(index))

    @precondition(lambda self: self.open)
    @rule(index=st.integers(0, MAX_OPEN - 1))
    def commit(self, index: int) -> None:
        txn = self._txn(index)
        self.touched.update(QUEUES)
        assert transaction_commit(transaction_id=txn).state == TransactionState.COMMITTED
        self.open.remove(txn)
        if any(m["get"] == txn for messages in self.queues.values() for m in messages):
            event("commit of gets")
        for messages in self.queues.values():
            messages[:] = [m for m in messages if m["get"] != txn]
            for m in messages:
                if m["put"] == txn:
                    m["put"] = None

    @precondition(lambda self: self.open)
    @rule(index=st.integers(0, MAX_OPEN - 1))
    def rollback(self, index: int) -> None:
        txn = self._txn(index)
        self.touched.update(QUEUES)
        outcome = transaction_rollback(transaction_id=txn)
        assert outcome.transaction.state == TransactionState.ROLLED_BACK and outcome.cascaded == []
        self.open.remove(txn)
        for messages in self.queues.values():
            messages[:] = [m for m in messages if m["put"] != txn]
        restored = sorted(
            ((name, m) for name, messages in self.queues.items() for m in messages if m["get"] == txn),
            key=lambda pair: pair[1]["seq"],
        )
        for name, m in restored:
            m["get"] = None
            m["backouts"] += 1
            _, _, threshold, backout_queue = QUEUES[name]
            if threshold and m["backouts"] >= threshold:
                target = backout_queue or DLQ
                event(f"moved {name} -> {target}")
                self.queues[name].remove(m)
                m["seq"] = next(self.seq)
                m["origin"] = name
                self.queues[target].append(m)

    # --- invariants ------------------------------------------------------------------

    @invariant()
    def depths_agree(self) -> None:
        actual = queue_depths(queue_ids=list(self.queue_ids.values()))
        for name, messages in self.queues.items():
            expected = {
                "depth": sum(1 for m in messages if m["put"] is None),
                "uncommitted_puts": sum(1 for m in messages if m["put"] is not None),
                "in_flight": sum(1 for m in messages if m["get"] is not None),
                "locked": 0,
            }
            assert actual[self.queue_ids[name]] == expected, name

    @invariant()
    def full_browse_agrees(self) -> None:
        for name, messages in self.queues.items():
            page = message_browse(broker=self.broker, queue=name, limit=1000)
            seen = [(bytes(m.body).decode(), m.backout_count, m.priority, m.dead_letter_queue) for m in page.messages]
            visible = sorted((m for m in messages if m["put"] is None and m["get"] is None), key=lambda m: m["seq"])
            assert seen == [(m["body"], m["backouts"], m["priority"], m["origin"]) for m in visible], name
            # and the number available is what a get could take
            assert len(seen) == len(self._available(name))

    @invariant()
    def room_agrees(self) -> None:
        """On each queue the step touched: every message on it (uncommitted puts and
        in-flight gets included) takes room up to max depth, so one more than the room
        left is refused whole and the room left fits. Tried inside a savepoint that is then
        undone, so the state does not change."""
        for queue in sorted(self.touched & set(PUT_QUEUES)):
            room = QUEUES[queue][1] - len(self.queues[queue])
            probe = db.savepoint()
            try:
                with pytest.raises(QueueFull):
                    message_put(broker=self.broker, queue=queue, messages=[MessageInput(body=b"p")] * (room + 1))
                if room:
                    message_put(broker=self.broker, queue=queue, messages=[MessageInput(body=b"p")] * room)
            finally:
                db.savepoint_rollback(probe)
        self.touched.clear()

    @invariant()
    def open_units_of_work_are_active(self) -> None:
        states = dict(Transaction.objects.filter(pk__in=self.open).values_list("pk", "state"))
        assert states == dict.fromkeys(self.open, TransactionState.ACTIVE)


def test_queues_agree_with_model(db):
    run_state_machine_as_test(
        QueueMachine,
        settings=settings(
            max_examples=examples(75, postgres=20),
            stateful_step_count=25,
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )

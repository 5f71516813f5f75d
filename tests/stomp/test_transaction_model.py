"""STOMP transactions against a plain model: random SENDs and ACKs (in the transaction or
not), BEGIN, COMMIT and ABORT from one stomp.py connection with a client-individual
subscription; after each step (a receipt: every frame before it is applied), the queue's
committed messages and its uncommitted puts are what the model says. Derandomized: the
same programs on every run (they find an ACK-only COMMIT that completes nothing).

The model: ``committed`` (put and committed, not yet completed), the transaction's
``sends`` (uncommitted) and ``acks`` (completed at COMMIT, available again at ABORT)."""

from __future__ import annotations

import itertools
from collections import Counter

from hypothesis import settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule, run_state_machine_as_test

from brokers.models import Message, put_committed_q, put_open_q
from brokers.services.queues import queue_define

from .conftest import bye, connected

_names = itertools.count()


def _bodies(rows) -> list[str]:
    return [bytes(b).decode() for b in rows.values_list("body", flat=True)]


class StompTransactions(RuleBasedStateMachine):
    def __init__(self, port: int, token: str) -> None:
        super().__init__()
        self.queue = f"M{next(_names)}"
        queue_define(broker="QM1", name=self.queue)
        self.conn, self.seen = connected(port, token)
        self.conn.subscribe(f"/queue/{self.queue}", id="s", ack="client-individual")
        self.receipts = itertools.count()
        self.bodies = itertools.count()
        self.txn: str | None = None
        self.committed: Counter[str] = Counter()
        self.sends: list[str] = []
        self.acks: list[str] = []  # bodies acknowledged under the open transaction
        self.done: set[str] = set()  # ack ids used (acknowledged, or given back with their transaction)
        for body in ("i0", "i1"):  # something to acknowledge from the first step
            self.conn.send(f"/queue/{self.queue}", body)
            self.committed[body] += 1

    def _applied(self) -> None:
        """Every frame sent so far applied: a frame with a receipt (the connection's thread
        applies frames in order)."""
        rid = f"r{next(self.receipts)}"
        probe = f"probe{rid}"
        self.conn.begin(probe, receipt=rid)
        self.seen.wait(lambda: rid in self.seen.receipts)
        self.conn.abort(probe)

    @rule()
    def send(self) -> None:
        body = f"b{next(self.bodies)}"
        self.conn.send(f"/queue/{self.queue}", body)
        self.committed[body] += 1

    @precondition(lambda self: self.txn is not None)
    @rule()
    def send_in_transaction(self) -> None:
        body = f"b{next(self.bodies)}"
        self.conn.send(f"/queue/{self.queue}", body, transaction=self.txn)
        self.sends.append(body)

    @precondition(lambda self: self.txn is None)
    @rule()
    def begin(self) -> None:
        self.txn = f"t{next(self.receipts)}"
        self.conn.begin(self.txn)

    @precondition(lambda self: self.txn is not None)
    @rule()
    def commit(self) -> None:
        rid = f"c{next(self.receipts)}"
        self.conn.commit(self.txn, receipt=rid)
        self.seen.wait(lambda: rid in self.seen.receipts)
        self.committed.update(self.sends)
        self.committed.subtract(self.acks)
        self.committed = +self.committed
        self.txn, self.sends, self.acks = None, [], []

    @precondition(lambda self: self.txn is not None)
    @rule()
    def abort(self) -> None:
        rid = f"a{next(self.receipts)}"
        self.conn.abort(self.txn, receipt=rid)
        self.seen.wait(lambda: rid in self.seen.receipts)
        self.txn, self.sends, self.acks = None, [], []  # what it acknowledged is redelivered

    def _delivered(self, data):
        """A committed message not acknowledged yet, as delivered (at once, or again after an
        ABORT); chosen by the model, then waited for."""
        body = data.draw(st.sampled_from(sorted(b for b in self.committed if b not in self.acks)))
        delivered = lambda: [  # noqa: E731
            m for m in self.seen.messages if m.body == body and m.headers["ack"] not in self.done
        ]
        self.seen.wait(lambda: delivered())
        message = delivered()[-1]
        self.done.add(message.headers["ack"])
        return message

    @precondition(lambda self: sum(self.committed.values()) > len(self.acks))
    @rule(data=st.data())
    def ack(self, data) -> None:
        message = self._delivered(data)
        rid = f"k{next(self.receipts)}"
        self.conn.ack(message.headers["ack"], receipt=rid)
        self.seen.wait(lambda: rid in self.seen.receipts)
        self.committed[message.body] -= 1
        self.committed = +self.committed

    @precondition(lambda self: self.txn is not None and sum(self.committed.values()) > len(self.acks))
    @rule(data=st.data())
    def ack_in_transaction(self, data) -> None:
        message = self._delivered(data)
        self.conn.ack(message.headers["ack"], transaction=self.txn)
        self.acks.append(message.body)

    @invariant()
    def the_queue_is_what_the_model_says(self) -> None:
        self._applied()
        rows = Message.objects.filter(queue__name=self.queue, queue__broker__name="QM1")
        committed = Counter(bytes(b).decode() for b in rows.filter(put_committed_q()).values_list("body", flat=True))
        uncommitted = sorted(bytes(b).decode() for b in rows.filter(put_open_q()).values_list("body", flat=True))
        assert committed == self.committed
        assert uncommitted == sorted(self.sends)
        assert self.seen.errors == []

    def teardown(self) -> None:
        bye(self.conn)


def test_stomp_transactions_against_a_model(stomp_port, stomp_broker, token):
    run_state_machine_as_test(
        lambda: StompTransactions(stomp_port, token),
        settings=settings(max_examples=40, stateful_step_count=12, deadline=None, derandomize=True),
    )

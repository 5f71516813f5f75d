"""A pre-emptive channel gathering a batch: an upstream's rollback that cascades to the
batch's unit of work mid-gather ends the gather quietly (its messages are back on the
transmission queue for the next batch), not the agent with an error."""

from __future__ import annotations

import threading
import time

import pytest

from brokers.channels.definitions import channel_get
from brokers.channels.sender import _batch_new
from brokers.channels.transports import transport_for
from brokers.models import ChannelBatch, Message, Queue
from brokers.services.messages import message_put
from tests.conftest import msgs
from tests.transfer.conftest import two_brokers
from transactions.manager import transaction_begin, transaction_rollback

pytestmark = pytest.mark.django_db(transaction=True)


def _until(check, what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def test_a_cascade_into_the_batch_mid_gather_ends_the_gather_and_sends_nothing():
    name = two_brokers(preemptive=True, batch_size=2)
    channel = channel_get(name=name)
    channel.batch_interval_ms = 30_000  # the gather waits for a second message
    transport = transport_for(channel)
    xmitq = Queue.objects.get(broker=channel.source_broker, name=channel.transmission_queue)
    upstream = transaction_begin(broker="QMA", timeout_ms=60_000).id
    message_put(broker="QMA", queue="RQ.QMB", messages=msgs("held"), transaction_id=upstream)
    outcome: list = []

    def gather() -> None:
        try:
            # the window's last place: the gather waits the whole interval for a second message
            outcome.append(_batch_new(channel, xmitq, transport, None, in_flight=channel.window - 1))
        except Exception as exc:  # what the agent met before: the cascade's TransactionBackedOut
            outcome.append(exc)

    thread = threading.Thread(target=gather)
    thread.start()
    try:
        _until(lambda: Message.objects.filter(get_transaction__isnull=False).exists(), "the gather's first get")
        transaction_rollback(transaction_id=upstream)  # cascades to the batch's unit of work
        message_put(broker="QMA", queue="RQ.QMB", messages=msgs("next"))  # wakes the gather
        thread.join(30)
    finally:
        transport.close()
    assert not thread.is_alive()
    assert outcome == [False]
    assert not ChannelBatch.objects.exists()
    assert [bytes(m.body).decode() for m in Message.objects.filter(queue__name="QMB")] == ["next"]


def test_a_gather_ends_when_its_upstream_commits_and_nothing_more_is_coming():
    """Once the unit of work whose messages a pre-emptive gather holds has committed, and no
    other open one has puts waiting, the batch goes at once, not an interval later."""
    from transactions.manager import transaction_commit

    name = two_brokers(preemptive=True, batch_size=10)
    channel = channel_get(name=name)
    channel.batch_interval_ms = 30_000  # the gather would wait this long for the rest of its batch
    transport = transport_for(channel)
    xmitq = Queue.objects.get(broker=channel.source_broker, name=channel.transmission_queue)
    upstream = transaction_begin(broker="QMA", timeout_ms=60_000).id
    message_put(broker="QMA", queue="RQ.QMB", messages=msgs("first"), transaction_id=upstream)
    outcome: list = []

    def gather() -> None:
        outcome.append(_batch_new(channel, xmitq, transport, None, in_flight=channel.window - 1))

    thread = threading.Thread(target=gather)
    thread.start()
    try:
        _until(lambda: Message.objects.filter(get_transaction__isnull=False).exists(), "the gather's first get")
        message_put(broker="QMA", queue="RQ.QMB", messages=msgs("second"), transaction_id=upstream)
        started = time.monotonic()
        transaction_commit(transaction_id=upstream)
        thread.join(20)
        waited = time.monotonic() - started
    finally:
        transport.close()
    assert not thread.is_alive() and outcome == [True]
    assert waited < 10, waited  # not the 30 s interval
    [batch] = ChannelBatch.objects.all()
    assert batch.messages == 2  # the message put while it gathered went with it

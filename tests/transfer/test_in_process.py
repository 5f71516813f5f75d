"""Channels between two brokers of one platform (docs/design.md §6)."""

from __future__ import annotations

import threading
import time

import pytest

from brokers.models import Channel, ChannelBatch, ChannelReceipt, Message, ReceivedBatch
from brokers.channels.sender import channel_agent_run
from brokers.services.messages import message_get, message_put
from tests.conftest import bodies, msgs
from tests.transfer.conftest import two_brokers
from transactions.manager import transaction_begin, transaction_commit, transaction_rollback
from transactions.models import Transaction

pytestmark = pytest.mark.linked  # also run on PostgreSQL


def run_once(name: str) -> str:
    return channel_agent_run(name=name, holder="test", once=True, max_seconds=30)


def test_messages_cross_in_one_batch_exactly_once_with_their_ids(ab):
    put = message_put(broker="QMA", queue="RQ.QMB", messages=msgs("a", "b", "c")).messages
    assert [m.transmission_header for m in put] == [{"broker": "QMB", "queue": "IN"}] * 3
    assert run_once(ab) == "committed"
    got = message_get(broker="QMB", queue="IN", batch=10)
    assert bodies(got) == ["a", "b", "c"] and [m.msg_id for m in got.messages] == [m.msg_id for m in put]
    channel = Channel.objects.get(name=ab)
    assert (channel.batches_committed, channel.messages_sent, channel.last_batch_seq) == (1, 3, 1)
    assert not ChannelBatch.objects.filter(channel=channel).exists()
    assert ChannelReceipt.objects.get(channel_name=ab).last_committed_seq == 1
    assert message_get(broker="QMA", queue="QMB").messages == []


def test_unknown_destination_goes_to_dead_letter_queue_with_reason(db):
    name = two_brokers()
    from brokers.services.queues import queue_define

    queue_define(
        broker="QMA",
        name="RQ.NOWHERE",
        kind="remote",
        remote_broker="QMB",
        remote_queue="NOWHERE",
        transmission_queue="QMB",
    )
    message_put(broker="QMA", queue="RQ.NOWHERE", messages=msgs("lost"))
    run_once(name)
    dlq = message_get(broker="QMB", queue="SYSTEM.DEAD.LETTER.QUEUE").messages
    assert bodies_of(dlq) == ["lost"] and "NOWHERE" in dlq[0].dead_letter_reason


def bodies_of(messages) -> list[str]:
    return [bytes(m.body).decode() for m in messages]


def test_reports_travel_back_across_channels(db):
    ab = two_brokers(source="QMA", target="QMB")
    ba = two_brokers(source="QMB", target="QMA", channel="QMB.QMA")
    message_put(
        broker="QMA", queue="RQ.QMB", messages=msgs("ask", report=["cod"], reply_to_queue="IN", reply_to_broker="QMA")
    )
    run_once(ab)
    original = message_get(broker="QMB", queue="IN").messages[0]  # final get: cod report to QMA via QMB's xmitq
    run_once(ba)
    report = message_get(broker="QMA", queue="IN").messages[0]
    assert (report.feedback, report.correl_id) == ("cod", original.msg_id)


def test_second_agent_cannot_take_the_lease(ab):
    from brokers.channels.sender import channel_lease_acquire, channel_lease_release

    assert channel_lease_acquire(name=ab, holder="one")
    assert not channel_lease_acquire(name=ab, holder="two")
    assert channel_agent_run(name=ab, holder="two", once=True) == "busy"
    channel_lease_release(name=ab, holder="one")
    assert channel_lease_acquire(name=ab, holder="two")


def wait_until(predicate, what: str, timeout: float = 20.0) -> None:
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.02)


def _agent_thread(name: str, results: dict) -> threading.Thread:
    def run():
        from django.db import connection

        try:
            results[name] = run_once(name)
        finally:
            connection.close()

    t = threading.Thread(target=run)
    t.start()
    return t


@pytest.mark.django_db(transaction=True)
def test_provisional_batch_lets_the_target_consume_before_the_producer_commits():
    name = two_brokers(preemptive=True)
    producer = transaction_begin(broker="QMA", timeout_ms=60_000).id
    put = message_put(broker="QMA", queue="RQ.QMB", messages=msgs("early"), transaction_id=producer).messages[0]
    results: dict = {}
    agent = _agent_thread(name, results)
    wait_until(
        lambda: ReceivedBatch.objects.filter(receipt__channel_name=name, seq=1).exists(), "the provisional batch"
    )
    consumer = transaction_begin(broker="QMB", timeout_ms=60_000).id
    got = message_get(broker="QMB", queue="IN", transaction_id=consumer, preemptive=True)
    assert [m.msg_id for m in got.messages] == [put.msg_id]
    assert transaction_commit(transaction_id=consumer).state == "commit_held"
    transaction_commit(transaction_id=producer)
    agent.join(30)
    assert results[name] == "committed"
    assert Transaction.objects.get(pk=consumer).state == "committed"
    assert not Message.objects.filter(msg_id=put.msg_id).exists()


@pytest.mark.django_db(transaction=True)
def test_producer_rollback_cascades_across_two_channels():
    ab = two_brokers(preemptive=True, source="QMA", target="QMB")
    bc = two_brokers(preemptive=True, source="QMB", target="QMC")
    producer = transaction_begin(broker="QMA", timeout_ms=60_000).id
    message_put(broker="QMA", queue="RQ.QMB", messages=msgs("x"), transaction_id=producer)
    results: dict = {}
    agents = [_agent_thread(ab, results)]
    wait_until(lambda: ReceivedBatch.objects.filter(receipt__channel_name=ab, seq=1).exists(), "batch A→B")
    relay = transaction_begin(broker="QMB", timeout_ms=60_000).id
    assert len(message_get(broker="QMB", queue="IN", transaction_id=relay, preemptive=True).messages) == 1
    message_put(broker="QMB", queue="RQ.QMC", messages=msgs("x'"), transaction_id=relay)
    transaction_commit(transaction_id=relay)
    agents.append(_agent_thread(bc, results))
    wait_until(lambda: ReceivedBatch.objects.filter(receipt__channel_name=bc, seq=1).exists(), "batch B→C")
    final = transaction_begin(broker="QMC", timeout_ms=60_000).id
    assert len(message_get(broker="QMC", queue="IN", transaction_id=final, preemptive=True).messages) == 1
    assert transaction_commit(transaction_id=final).state == "commit_held"
    transaction_rollback(transaction_id=producer)
    for agent in agents:
        agent.join(30)
    assert results == {ab: "backed_out", bc: "backed_out"}
    for txn in (relay, final):
        row = Transaction.objects.get(pk=txn)
        assert row.state == "rolled_back" and row.reason.startswith("cascade from"), (txn, row.reason)
    assert not Message.objects.filter(queue__name__in=["IN", "QMB", "QMC"]).exists()


def test_batches_stop_at_batch_bytes_and_always_take_one_message(db):
    name = two_brokers(batch_size=50)
    Channel.objects.filter(name=name).update(batch_bytes=2500)
    message_put(broker="QMA", queue="RQ.QMB", messages=msgs(*["x" * 1000] * 5, "y" * 4000))
    sizes = []
    while Message.objects.filter(queue__broker__name="QMA").exists() and len(sizes) < 6:
        before = Channel.objects.get(name=name).messages_sent
        assert run_once(name) == "committed"
        sizes.append(Channel.objects.get(name=name).messages_sent - before)
    # 1000-byte messages two to a batch (a third would pass 2500 bytes); the 4000-byte one alone
    assert sizes == [2, 2, 1, 1], sizes
    assert Channel.objects.get(name=name).bytes_sent == 9000
    assert len(message_get(broker="QMB", queue="IN", batch=10).messages) == 6

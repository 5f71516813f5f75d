"""A channel's window never stalls behind a held batch: a later batch that is ready commits
at the receiver (and its messages are there for any consumer) while an earlier one still
waits on its upstream unit of work; the receiver keeps exactly-once bookkeeping either way."""

from __future__ import annotations

import base64

import pytest

from brokers.channels.definitions import channel_get
from brokers.channels.receiver import receiver_batch_commit, receiver_batch_receive, receiver_batch_status
from brokers.channels.sender import _batch_new, channel_batch_cycle
from brokers.channels.transports import transport_for
from brokers.models import ChannelBatch, ChannelReceipt, Message, Queue, put_committed_q
from brokers.services.brokers import broker_define
from brokers.services.messages import message_get, message_put
from brokers.services.queues import queue_define
from tests.conftest import bodies, msgs
from tests.transfer.conftest import two_brokers
from transactions.manager import transaction_begin, transaction_commit, transaction_rollback

pytestmark = pytest.mark.django_db


def item(n: int) -> dict:
    return {
        "msg_id": f"{n:048x}",
        "put_time": "2026-01-01T00:00:00+00:00",
        "body_base64": base64.b64encode(b"x").decode(),
        "destination": {"broker": "QMB", "queue": "IN"},
    }


def test_the_receiver_commits_a_later_batch_before_an_earlier_pending_one():
    broker_define(name="QMB")
    queue_define(broker="QMB", name="IN")
    key = {"channel": "A.B", "source_broker": "QMA"}
    for seq in (1, 2, 3):
        receiver_batch_receive(
            payload={**key, "target_broker": "QMB", "seq": seq, "provisional": True, "messages": [item(seq)]}
        )
    assert receiver_batch_commit(**key, seq=2, through=3) == {"state": "committed", "seq": 2, "committed_through": 3}
    assert [receiver_batch_status(**key, seq=n)["state"] for n in (1, 2, 3)] == ["pending", "committed", "committed"]
    assert ChannelReceipt.objects.get(channel_name="A.B").last_committed_seq == 0  # batch 1 still held
    # sent again, a committed batch is not put again
    again = receiver_batch_receive(payload={**key, "target_broker": "QMB", "seq": 2, "messages": [item(2)]})
    assert again["state"] == "committed"
    assert receiver_batch_commit(**key, seq=1)["state"] == "committed"
    assert ChannelReceipt.objects.get(channel_name="A.B").last_committed_seq == 3
    assert [receiver_batch_status(**key, seq=n)["state"] for n in (1, 2, 3, 4)] == [
        "committed",
        "committed",
        "committed",
        "unknown",
    ]
    assert Message.objects.filter(put_committed_q(), queue__name="IN").count() == 3


def test_a_ready_batch_settles_while_the_one_ahead_waits_on_a_long_unit_of_work():
    name = two_brokers(preemptive=True)
    channel = channel_get(name=name)
    transport = transport_for(channel)
    long = transaction_begin(broker="QMA", timeout_ms=60_000).id
    message_put(broker="QMA", queue="RQ.QMB", messages=msgs("held"), transaction_id=long)
    assert channel_batch_cycle(channel=channel, transport=transport) == "sent"  # batch 1: provisional
    message_put(broker="QMA", queue="RQ.QMB", messages=msgs("ready"))
    assert channel_batch_cycle(channel=channel, transport=transport) == "sent"  # batch 2: its upstream committed
    assert channel_batch_cycle(channel=channel, transport=transport) == "committed"  # batch 2, ahead of batch 1
    assert list(ChannelBatch.objects.filter(channel=channel).values_list("seq", flat=True)) == [1]
    assert bodies(message_get(broker="QMB", queue="IN")) == ["ready"]  # any consumer has it now
    transaction_commit(transaction_id=long)
    assert channel_batch_cycle(channel=channel, transport=transport) == "committed"
    assert bodies(message_get(broker="QMB", queue="IN")) == ["held"]
    assert not ChannelBatch.objects.filter(channel=channel).exists()
    assert ChannelReceipt.objects.get(channel_name=name).last_committed_seq == 2
    assert message_get(broker="QMA", queue="QMB").messages == []  # each sent once, gone from the source
    transport.close()


# A batch whose T_s an upstream's rollback backed out may still be held at the receiver when
# its committed messages are gathered again (the scaled-out soak lost messages this way):
# they must arrive once, not be taken for duplicates of the held copy and dropped.
def test_messages_of_a_batch_backed_out_by_a_cascade_arrive_when_gathered_again_before_its_backout():
    name = two_brokers(preemptive=True)
    channel = channel_get(name=name)
    transport = transport_for(channel)
    upstream = transaction_begin(broker="QMA", timeout_ms=60_000).id
    message_put(broker="QMA", queue="RQ.QMB", messages=msgs("uncommitted"), transaction_id=upstream)
    message_put(broker="QMA", queue="RQ.QMB", messages=msgs("committed"))
    assert channel_batch_cycle(channel=channel, transport=transport) == "sent"  # batch 1 holds both, provisional
    transaction_rollback(transaction_id=upstream)  # cascades to batch 1's T_s: "committed" is back on QMB
    # the agent's step had read batch 1 as pending just before that rollback, and goes on to a new batch
    channel.refresh_from_db()
    queue = Queue.objects.get(broker__name="QMA", name="QMB")
    assert _batch_new(channel, queue, transport, None)
    for _ in range(4):  # batch 1 backs out, batch 2 commits
        channel_batch_cycle(channel=channel, transport=transport)
        if not ChannelBatch.objects.filter(channel=channel).exists():
            break
    assert not ChannelBatch.objects.filter(channel=channel).exists()
    assert bodies(message_get(broker="QMB", queue="IN")) == ["committed"]  # arrived, once
    assert message_get(broker="QMA", queue="QMB").messages == []
    transport.close()

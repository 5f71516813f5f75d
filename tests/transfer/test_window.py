"""A channel's window never stalls behind a held batch: a later batch that is ready commits
at the receiver (and its messages are there for any consumer) while an earlier one still
waits on its upstream unit of work; the receiver keeps exactly-once bookkeeping either way."""

from __future__ import annotations

import base64

import pytest

from brokers.channels.definitions import channel_get
from brokers.channels.receiver import receiver_batch_commit, receiver_batch_receive, receiver_batch_status
from brokers.channels.sender import channel_batch_cycle
from brokers.channels.transports import transport_for
from brokers.models import ChannelBatch, ChannelReceipt, Message
from brokers.services.brokers import broker_define
from brokers.services.messages import message_get, message_put
from brokers.services.queues import queue_define
from tests.conftest import bodies, msgs
from tests.transfer.conftest import two_brokers
from transactions.manager import transaction_begin, transaction_commit

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
    assert Message.objects.filter(queue__name="IN", put_transaction__isnull=True).count() == 3


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

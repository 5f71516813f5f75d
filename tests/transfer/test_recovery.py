"""Exactly once across crashes: the agent is SIGKILLed at each step of the batch protocol,
then a new agent resolves the batch in doubt."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from brokers.models import Channel, ChannelBatch, Message, ReceivedBatch
from brokers.channels.sender import CRASH_POINTS, channel_agent_run
from brokers.services.messages import message_get, message_put
from tests.conftest import database_url, msgs
from tests.transfer.conftest import two_brokers
from transactions.manager import transaction_begin, transaction_commit, transaction_rollback
from transactions.models import OPEN_STATES, Transaction

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.linked]  # linked: also run on PostgreSQL

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("crash_at", CRASH_POINTS)
def test_agent_killed_at_each_step_delivers_exactly_once(crash_at):
    name = two_brokers(preemptive=False)
    put = message_put(broker="QMA", queue="RQ.QMB", messages=msgs(*[f"m{i}" for i in range(5)])).messages
    proc = subprocess.run(
        [sys.executable, "manage.py", "channel_run", name, "--once", "--crash-at", crash_at],
        cwd=ROOT,
        env=dict(os.environ, DATABASE_URL=database_url()),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    Channel.objects.filter(name=name).update(lease_until="2000-01-01T00:00:00Z")  # the dead agent's lease lapses
    for _ in range(3):  # a new agent resolves the batch in doubt, then finds nothing more to send
        channel_agent_run(name=name, holder="recovery", once=True, max_seconds=5)
        if not Message.objects.filter(queue__broker__name="QMA").exists():
            break
    delivered = [m.msg_id for m in message_get(broker="QMB", queue="IN", batch=100).messages]
    assert sorted(delivered) == sorted(m.msg_id for m in put), f"crash at {crash_at}"
    assert not Message.objects.filter(queue__broker__name="QMA").exists()
    channel = Channel.objects.get(name=name)
    assert not ChannelBatch.objects.filter(channel=channel).exists() and channel.batches_committed == 1
    assert not Transaction.objects.filter(state__in=OPEN_STATES).exists()


WINDOW_CRASHES = ["after_get@4", "after_record@4", "after_send@4", "after_receiver_commit@1", "after_sender_commit@1"]


def _settled(name: str) -> bool:
    return (
        not Message.objects.filter(queue__broker__name="QMA").exists()
        and not ChannelBatch.objects.filter(channel__name=name).exists()
    )


@pytest.mark.parametrize(
    ("crash_at", "outcome"),
    [(c, "commit") for c in WINDOW_CRASHES] + [("after_get@4", "rollback"), ("after_send@4", "rollback")],
)
def test_agent_killed_with_a_window_of_batches_in_doubt(crash_at, outcome):
    """Five provisional batches of one message each, all waiting on one producer; the agent
    dies getting, recording or sending the fourth (three in doubt), or settling the five
    together once the producer committed (all five in doubt after the receiver committed
    them; none after the sender's commit of all five). Then the producer commits or rolls
    back, and a new agent asks about each batch, in order."""
    name = two_brokers(preemptive=True, batch_size=1)
    Channel.objects.filter(name=name).update(window=8)
    producer = transaction_begin(broker="QMA", timeout_ms=120_000).id
    put = message_put(
        broker="QMA", queue="RQ.QMB", messages=msgs(*[f"m{i}" for i in range(5)]), transaction_id=producer
    ).messages
    proc = subprocess.Popen(
        [sys.executable, "manage.py", "channel_run", name, "--seconds", "60", "--crash-at", crash_at],
        cwd=ROOT,
        env=dict(os.environ, DATABASE_URL=database_url()),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    settling = crash_at.startswith(("after_receiver_commit", "after_sender_commit"))
    if settling:  # the whole window is out: let the first batch be ready
        end = time.monotonic() + 60
        while ReceivedBatch.objects.filter(receipt__channel_name=name).count() < 5 and proc.poll() is None:
            assert time.monotonic() < end, "the window never filled"
            time.sleep(0.05)
        transaction_commit(transaction_id=producer)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == -signal.SIGKILL, stderr
    in_doubt = ChannelBatch.objects.filter(channel__name=name).count()
    # dying before the five left the window: all five (batch 5 was sent too); after: none; else the three sent
    # before batch 4 (and the fourth once recorded)
    assert in_doubt == (
        5 if crash_at == "after_receiver_commit@1" else 0 if settling else 3 + (crash_at != "after_get@4")
    ), in_doubt
    if not settling:
        if outcome == "commit":
            transaction_commit(transaction_id=producer)
        else:
            transaction_rollback(transaction_id=producer)
    Channel.objects.filter(name=name).update(lease_until="2000-01-01T00:00:00Z")  # the dead agent's lease lapses
    for _ in range(12):  # new agents resolve the batches in doubt in order, then send the rest
        if _settled(name):
            break
        channel_agent_run(name=name, holder="recovery", once=True, max_seconds=10)
    assert _settled(name)
    delivered = [m.msg_id for m in message_get(broker="QMB", queue="IN", batch=100).messages]
    rolled_back = outcome == "rollback" and not settling
    assert sorted(delivered) == ([] if rolled_back else sorted(m.msg_id for m in put)), f"crash at {crash_at}"
    channel = Channel.objects.get(name=name)
    assert channel.batches_committed == (0 if rolled_back else 5) and channel.messages_sent == len(delivered)
    assert not ReceivedBatch.objects.filter(receipt__channel_name=name).exists()
    assert not Transaction.objects.filter(state__in=OPEN_STATES).exists()

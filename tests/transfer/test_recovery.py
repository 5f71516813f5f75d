"""Exactly once across crashes: the agent is SIGKILLed at each step of the batch protocol,
then a new agent resolves the batch in doubt."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from brokers.models import Channel, ChannelBatch, Message
from brokers.services.channel_sender import CRASH_POINTS, channel_agent_run
from brokers.services.messages import message_get, message_put
from tests.conftest import database_url, msgs
from tests.transfer.conftest import two_brokers
from transactions.models import OPEN_STATES, Transaction

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.linked]  # linked: also run on PostgreSQL

ROOT = Path(__file__).resolve().parents[2]




@pytest.mark.parametrize("crash_at", CRASH_POINTS)
def test_agent_killed_at_each_step_delivers_exactly_once(crash_at):
    name = two_brokers(preemptive=False)
    put = message_put(broker="QMA", queue="RQ.QMB", messages=msgs(*[f"m{i}" for i in range(5)])).messages
    proc = subprocess.run(
        [sys.executable, "manage.py", "channel_run", name, "--once", "--crash-at", crash_at],
        cwd=ROOT, env=dict(os.environ, DATABASE_URL=database_url()), capture_output=True, text=True, timeout=120,
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

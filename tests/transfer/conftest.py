from __future__ import annotations

import pytest

from brokers.services.brokers import broker_define
from brokers.channels.definitions import channel_define, channel_start
from brokers.services.queues import queue_define


def two_brokers(
    *,
    preemptive: bool = False,
    source: str = "QMA",
    target: str = "QMB",
    channel: str | None = None,
    batch_size: int = 50,
) -> str:
    """Broker ``source`` with a remote queue RQ.<target> → ``target``/IN over a channel."""
    for name in (source, target):
        if not __import__("brokers.models", fromlist=["Broker"]).Broker.objects.filter(name=name).exists():
            broker_define(name=name, transaction_timeout_ms=120_000)
    queue_define(broker=target, name="IN")
    queue_define(broker=source, name=target, usage="transmission")
    queue_define(
        broker=source,
        name=f"RQ.{target}",
        kind="remote",
        remote_broker=target,
        remote_queue="IN",
        transmission_queue=target,
    )
    name = channel or f"{source}.{target}"
    channel_define(
        name=name,
        source_broker=source,
        transmission_queue=target,
        target_broker=target,
        preemptive=preemptive,
        batch_size=batch_size,
        batch_interval_ms=50,
    )
    channel_start(name=name, dispatch=False)
    return name


@pytest.fixture
def ab(db) -> str:
    return two_brokers()

"""Channel administration from the shell."""

from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command

from brokers.models import Channel
from brokers.services.brokers import broker_define
from brokers.services.queues import queue_define


@pytest.fixture
def topology(db):
    broker_define(name="QMA")
    broker_define(name="QMB")
    queue_define(broker="QMA", name="QMB", usage="transmission")


def run(*args) -> str:
    from io import StringIO

    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_define_display_alter_start_stop_delete(topology):
    run(
        "define_channel",
        "A.B",
        "--source-broker",
        "QMA",
        "--transmission-queue",
        "QMB",
        "--target-broker",
        "QMB",
        "--batch-size",
        "20",
        "--preemptive",
    )
    shown = json.loads(run("display_channel", "A.B", "--json"))[0]
    assert (shown["source_broker"], shown["batch_size"], shown["preemptive"], shown["state"]) == (
        "QMA",
        20,
        True,
        "stopped",
    )
    run("alter_channel", "A.B", "--batch-size", "30")
    assert Channel.objects.get(name="A.B").batch_size == 30
    assert "A.B" in run("display_channel", "*")
    Channel.objects.filter(name="A.B").update(enabled=True)  # as start_channel does, without a worker
    with pytest.raises(CommandError, match="Stop channel"):
        run("alter_channel", "A.B", "--batch-size", "40")
    assert "stopping" in run("stop_channel", "A.B")
    run("delete_channel", "A.B")
    assert not Channel.objects.exists()


def test_define_refuses_a_missing_transmission_queue(topology):
    with pytest.raises(CommandError, match="transmission_queue"):
        run("define_channel", "A.B", "--source-broker", "QMA", "--transmission-queue", "NOPE", "--target-broker", "QMB")
    assert not Channel.objects.exists()

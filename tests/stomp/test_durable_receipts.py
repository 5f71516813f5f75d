"""A RECEIPT that says a SEND or an ACK is done goes only once its commit is on disk, while
the connection's thread goes on meanwhile: the commit's sync is the process's syncer
thread's (transactions/durability.py ``durability_deferred``, transactions/wal_sync.py),
and the connection's replies wait behind it, in order (brokers/api/pump.py ``held``)."""

from __future__ import annotations

import time

import pytest
from django.db import connection

from transactions import wal_sync

from .conftest import Raw

pytestmark = pytest.mark.integration


@pytest.fixture
def slow_disk(monkeypatch):
    """Each WAL sync takes 0.2 s more; what happened, in order, is in the list."""
    if connection.vendor != "sqlite":
        pytest.skip("PostgreSQL's commit is on disk when it returns: nothing waits for a sync after it")
    events: list[str] = []
    real = wal_sync._WalLog.sync

    def sync(self) -> None:
        time.sleep(0.2)  # the disk is slow: a reply sent without waiting would come first
        real(self)
        events.append("synced")

    monkeypatch.setattr(wal_sync._WalLog, "sync", sync)
    return events


def test_a_receipt_comes_after_its_commits_sync(stomp_port, stomp_broker, token, slow_disk):
    raw = Raw(stomp_port)
    try:
        raw.connect(token)
        raw.send(b"SUBSCRIBE\nid:s\ndestination:/queue/Q1\nack:client-individual\n\n\0")
        slow_disk.clear()
        raw.send(b"SEND\ndestination:/queue/Q1\nreceipt:sent\n\nhello\0")
        first, second = raw.next(), raw.next()
        # the MESSAGE may go before the sync (others may read a commit before it is on
        # disk); the RECEIPT that says it is done only after
        assert sorted([first.command, second.command]) == ["MESSAGE", "RECEIPT"]
        receipt = first if first.command == "RECEIPT" else second
        message = second if receipt is first else first
        slow_disk.append("RECEIPT")
        assert slow_disk == ["synced", "RECEIPT"]
        slow_disk.clear()
        raw.send(f"ACK\nid:{message.get('ack')}\nreceipt:acked\n\n\0".encode())
        acked = raw.next()
        slow_disk.append(acked.command)
        assert acked.get("receipt-id") == "acked"
        assert slow_disk == ["synced", "RECEIPT"]
    finally:
        raw.close()

"""PostgreSQL's wake-up bus publishes after the commit, from a connection of its own
(transactions/wakeup_postgres.py): never inside a committing transaction, where a NOTIFY
would hold the server's notification lock through the commit's WAL flush."""

from __future__ import annotations

import pytest
from django.db import connection

from brokers.services.messages import message_put
from tests.helpers import wakeup_listener
from tests.conftest import msgs
from transactions.wakeup_bus import MAX_PAYLOAD, payload_deliver
from transactions.wakeup_postgres import payloads_split

pytestmark = [pytest.mark.django_db(transaction=True)]


def test_keys_split_into_payloads_no_longer_than_a_notification_takes_each_once():
    keys = [f"queue:{n}" for n in range(3000)] + ["txn:" + "f" * 32, "queue:7"]
    payloads = payloads_split(keys)
    assert len(payloads) > 1 and all(len(p) <= MAX_PAYLOAD for p in payloads)
    assert [k for p in payloads for k in p.split()] == list(dict.fromkeys(keys))
    assert payloads_split([]) == []


def test_every_payload_wakes_by_keys_not_all(monkeypatch):
    woken = []
    monkeypatch.setattr("transactions.wakeup_bus.wakeup_notify", woken.extend)
    for payload in payloads_split([f"queue:{n}" for n in range(2000)]):
        payload_deliver(payload)
    assert woken == [f"queue:{n}" for n in range(2000)]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="LISTEN/NOTIFY is PostgreSQL's")
def test_an_immediate_put_is_heard_from_the_publisher_not_from_the_committing_backend(queue):
    from brokers.models import Queue

    message_put(broker="QM1", queue="Q1", messages=msgs("w"))  # the publisher started
    with wakeup_listener() as listener:
        message_put(broker="QM1", queue="Q1", messages=msgs("a"))
        heard = list(listener.notifies(timeout=5, stop_after=1))
    assert heard and f"queue:{Queue.objects.get(name='Q1').pk}" in heard[0].payload.split()
    assert heard[0].pid != connection.connection.info.backend_pid


@pytest.mark.skipif(connection.vendor != "postgresql", reason="LISTEN/NOTIFY is PostgreSQL's")
def test_a_stopped_bus_sends_what_it_holds_and_closes_its_publisher():
    from transactions.wakeup_postgres import PostgresBus

    bus = PostgresBus(params=connection.get_connection_params())
    with wakeup_listener() as listener:
        bus.publish_after_commit(["queue:1", "txn:x"])
        bus.stop()
        heard = list(listener.notifies(timeout=5, stop_after=1))
    assert heard and heard[0].payload == "queue:1 txn:x"
    assert not bus._publisher.is_alive()


@pytest.mark.skipif(connection.vendor != "postgresql", reason="LISTEN/NOTIFY is PostgreSQL's")
def test_a_payload_reaches_the_listener_as_it_was_whatever_characters_it_holds():
    from transactions.wakeup_postgres import PostgresBus

    keys = ['queue:"quoted"', "back\\slash", "{braces},comma", "naïve", "NULL"]
    bus = PostgresBus(params=connection.get_connection_params())
    with wakeup_listener() as listener:
        bus.publish_after_commit(keys)
        bus.stop()
        heard = list(listener.notifies(timeout=5, stop_after=1))
    assert heard and heard[0].payload.split(" ") == [
        'queue:"quoted"',
        "back\\slash",
        "{braces},comma",
        "naïve",
        "NULL",
    ]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="LISTEN/NOTIFY is PostgreSQL's")
def test_a_process_passes_over_what_its_own_publisher_notified_and_hears_the_others(monkeypatch):
    """What a process publishes, its waiters were woken for at the commit already: its
    listener does not wake them again for it (each such wake cost a waiting get a look). What
    another process publishes wakes them."""
    import threading

    from transactions.wakeup_postgres import PostgresBus

    delivered: list[str] = []
    heard_other = threading.Event()

    def recorded(payload: str) -> None:
        if threading.current_thread() is not ours._thread:
            return  # another bus of this test process (the process's own, started by an earlier test)
        delivered.append(payload)
        if payload == "queue:other":
            heard_other.set()

    monkeypatch.setattr("transactions.wakeup_postgres.payload_deliver", recorded)
    ours = PostgresBus(params=connection.get_connection_params())
    theirs = PostgresBus(params=connection.get_connection_params())
    ours.listen()
    try:
        assert ours.listening
        with wakeup_listener() as listener:
            ours.publish_after_commit(["queue:own"])
            # sent (another listener heard it) before the other process's: heard in that order
            assert [n.payload for n in listener.notifies(timeout=10, stop_after=1)] == ["queue:own"]
        theirs.publish_after_commit(["queue:other"])
        assert heard_other.wait(10)
        assert delivered == ["queue:other"]
    finally:
        ours.stop()
        theirs.stop()

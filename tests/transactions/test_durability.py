"""Durable and relaxed database transactions (transactions/durability.py): what the
database is told to do at each step's commit."""

from __future__ import annotations

import pytest
from django.db import connection

from brokers.services.messages import message_put
from tests.conftest import msgs
from transactions.durability import engine_step
from transactions.queries import cursor as engine_cursor
from transactions.manager import transaction_begin, transaction_commit
from transactions.wal_sync import wal_syncs

pytestmark = pytest.mark.django_db(transaction=True)  # steps must be outermost transactions


def level() -> str:
    """The level in effect for the engine's next statement (on PostgreSQL, ``SET LOCAL`` is
    sent with that statement: transactions.queries.deferred)."""
    with engine_cursor() as c:
        if connection.vendor == "sqlite":
            c.execute("PRAGMA synchronous")
            return {0: "off", 1: "normal", 2: "full", 3: "extra"}[c.fetchone()[0]]
        c.execute("SHOW synchronous_commit")
        return c.fetchone()[0]


DURABLE = {"sqlite": "full", "postgresql": "on"}
RELAXED = {"sqlite": "normal", "postgresql": "off"}


def test_the_connection_is_durable_by_default():
    assert level() == DURABLE[connection.vendor]


def test_a_relaxed_step_skips_the_sync_and_puts_the_default_back():
    with engine_step(durable=False):
        assert level() == RELAXED[connection.vendor]
    assert level() == DURABLE[connection.vendor]


def test_a_durable_step_syncs():
    if connection.vendor == "sqlite":
        # Group commit: committed at NORMAL, then the WAL synced before the step returns.
        before = wal_syncs()
        with engine_step(durable=True):
            assert level() == RELAXED["sqlite"]
            with engine_cursor() as c:
                c.execute("CREATE TABLE IF NOT EXISTS durability_probe (x integer)")
                c.execute("INSERT INTO durability_probe VALUES (1)")
            assert wal_syncs() == before  # not before the commit
        assert wal_syncs() == before + 1
        assert level() == DURABLE["sqlite"]  # other writes stay FULL
        return
    with engine_step(durable=True):
        assert level() == DURABLE[connection.vendor]


def test_a_relaxed_step_does_not_sync():
    before = wal_syncs()
    with engine_step(durable=False):
        with engine_cursor() as c:
            c.execute("CREATE TABLE IF NOT EXISTS durability_probe (x integer)")
            c.execute("INSERT INTO durability_probe VALUES (1)")
    assert wal_syncs() == before


def test_concurrent_durable_commits_share_syncs_and_each_is_covered(queue):
    """Threads putting durably at once: every put is there, and never more syncs than
    commits (a sync covers every commit finished before it began)."""
    import threading

    from brokers.models import Message

    before = wal_syncs()
    errors = []

    def producer(n: int) -> None:
        try:
            for i in range(10):
                message_put(broker="QM1", queue="Q1", messages=msgs(f"{n}-{i}"))
        except Exception as exc:  # reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=producer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert Message.objects.filter(queue__name="Q1").count() == 40
    if connection.vendor == "sqlite":
        assert 1 <= wal_syncs() - before <= 40


def test_a_step_inside_a_callers_transaction_leaves_it_durable():
    from django.db import transaction as db

    with db.atomic():
        with engine_step(durable=False):
            assert level() == DURABLE[connection.vendor]


def test_a_unit_of_work_ends_durable(queue):
    txn = transaction_begin(broker="QM1", timeout_ms=60_000)
    message_put(broker="QM1", queue="Q1", messages=msgs("a"), transaction_id=txn.id)
    assert level() == DURABLE[connection.vendor]  # what any other write would commit with
    assert transaction_commit(transaction_id=txn.id).state == "committed"


def test_a_commit_held_on_its_upstream_skips_the_sync_and_the_commit_releasing_it_syncs(queue):
    """A held commit promises nothing on disk (an API 202, not a 200): restart recovery rolls
    the held unit of work back, as every open one, synced or not. The upstream's commit,
    which releases it, is durable and covers it."""
    from django.test.utils import CaptureQueriesContext

    from brokers.services.messages import message_get

    producer = transaction_begin(broker="QM1", timeout_ms=60_000)
    message_put(broker="QM1", queue="Q1", messages=msgs("a"), transaction_id=producer.id)
    consumer = transaction_begin(broker="QM1", timeout_ms=60_000)
    got = message_get(broker="QM1", queue="Q1", transaction_id=consumer.id, preemptive=True)
    assert [bytes(m.body) for m in got.messages] == [b"a"]

    def committed(transaction_id: str) -> tuple[str, int, list[str]]:
        before = wal_syncs()
        with CaptureQueriesContext(connection) as queries:
            state = transaction_commit(transaction_id=transaction_id).state
        relaxed = [q["sql"] for q in queries.captured_queries if "synchronous_commit TO OFF" in q["sql"]]
        return state, wal_syncs() - before, relaxed

    held = committed(consumer.id)
    released = committed(producer.id)
    assert [held[0], released[0]] == ["commit_held", "committed"]
    if connection.vendor == "sqlite":
        assert [held[1], released[1]] == [0, 1]
    else:
        assert held[2] and not released[2]
    assert transaction_commit(transaction_id=consumer.id).state == "committed"


def _switches(statements: list[str]) -> list[str]:
    return [s for s in statements if s.startswith("PRAGMA synchronous=")]


@pytest.fixture
def traced():
    """The statements the connection runs, as SQLite sees them (SQLite only)."""
    if connection.vendor != "sqlite":
        pytest.skip("the synchronous level is SQLite's")
    connection.ensure_connection()
    statements: list[str] = []
    connection.connection.set_trace_callback(statements.append)
    yield statements
    if connection.connection is not None:
        connection.connection.set_trace_callback(None)


def test_steps_one_after_another_lower_the_level_once(traced):
    for _ in range(3):
        with engine_step(durable=False):
            with engine_cursor() as c:
                c.execute("CREATE TABLE IF NOT EXISTS durability_probe (x integer)")
                c.execute("INSERT INTO durability_probe VALUES (1)")
    assert _switches(traced) == ["PRAGMA synchronous=NORMAL"]
    assert level() == "full"  # the next statement that is not a step's: FULL first
    assert _switches(traced) == ["PRAGMA synchronous=NORMAL", "PRAGMA synchronous=FULL"]


def test_any_other_write_after_a_step_commits_at_full(traced, queue):
    from django.db import transaction as db

    from brokers.models import Queue

    with engine_step(durable=False):
        with engine_cursor() as c:
            c.execute("SELECT 1")
    with db.atomic():  # the ORM's own transaction: FULL before its BEGIN
        Queue.objects.filter(pk=queue.pk).update(description="durable")
    update = next(i for i, s in enumerate(traced) if "'durable'" in s)
    assert traced[update - 2 : update] == ["PRAGMA synchronous=FULL", "BEGIN IMMEDIATE"]
    with engine_step(durable=False):
        pass
    Queue.objects.filter(pk=queue.pk).update(description="also durable")  # autocommit: FULL before it
    update = next(i for i, s in enumerate(traced) if "also durable" in s)  # (a trigger traces it again)
    assert traced[update - 1] == "PRAGMA synchronous=FULL"
    assert _switches(traced) == ["PRAGMA synchronous=NORMAL", "PRAGMA synchronous=FULL"] * 2


def test_a_deferred_durable_step_hands_its_ticket_over_and_is_called_back_after_its_sync():
    """Under ``durability_deferred`` (a STOMP connection's frames) the step returns at once
    with its commit not yet synced; the callback comes from the syncer thread after a sync
    that covers it. On PostgreSQL the commit is on disk when it returns: nothing handed over."""
    import threading

    from transactions.durability import durability_deferred
    from transactions.wal_sync import wal_when_synced

    tickets, called = [], threading.Event()
    seen: list = []

    def until_synced(ticket) -> None:
        tickets.append(ticket)
        wal_when_synced(ticket, lambda error: (seen.append((error, wal_syncs())), called.set()))

    before = wal_syncs()
    with durability_deferred(until_synced):
        with engine_step(durable=True):
            with engine_cursor() as c:
                c.execute("CREATE TABLE IF NOT EXISTS durability_probe (x integer)")
                c.execute("INSERT INTO durability_probe VALUES (1)")
        with engine_step(durable=False):  # a relaxed step promises nothing: no ticket
            pass
    if connection.vendor != "sqlite":
        assert tickets == []
        return
    assert len(tickets) == 1
    assert called.wait(10)
    error, syncs_then = seen[0]
    assert error is None and syncs_then >= before + 1  # called back only after a sync
    log, number = tickets[0]
    assert log.covered >= number
    later = threading.Event()
    wal_when_synced(tickets[0], lambda error: later.set())  # covered already: at once
    assert later.is_set()


def test_a_failed_sync_calls_back_with_the_error(tmp_path):
    """The WAL cannot be synced (its path leads to /dev/null here, which refuses
    fdatasync): the callback gets the error, and a later sync of a good WAL still calls
    back its own."""
    import threading

    from transactions.wal_sync import wal_commit_finished, wal_when_synced

    bad = tmp_path / "bad.sqlite3"
    (tmp_path / "bad.sqlite3-wal").symlink_to("/dev/null")  # opens; fdatasync: EINVAL
    got: list = []
    done = threading.Event()
    ticket = wal_commit_finished(str(bad))
    wal_when_synced(ticket, lambda error: (got.append(error), done.set()))
    assert done.wait(10)
    assert isinstance(got[0], OSError)
    good = tmp_path / "good.sqlite3"
    (tmp_path / "good.sqlite3-wal").write_bytes(b"x")
    ok = threading.Event()
    wal_when_synced(wal_commit_finished(str(good)), lambda error: error is None and ok.set())
    assert ok.wait(10)

"""SQLite's writers queue on one writer lock per database, across threads and processes
(transactions/sqlite_writer.py): held from BEGIN to COMMIT or ROLLBACK, bounded by the busy
timeout, given up by a process that dies, fresh in a forked child."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest
from django.db import OperationalError, connection, transaction

from transactions.sqlite_writer import WriterLock, writer_lock

#: A second process that tries the lock of the file given, with the timeout given.
TRY = """
import sys
from django.conf import settings
settings.configure()
from transactions.sqlite_writer import WriterLock
lock = WriterLock(sys.argv[1])
try:
    lock.acquire(timeout_s=float(sys.argv[2]))
except Exception as exc:
    print(type(exc).__name__, exc)
else:
    lock.release()
    print("acquired")
"""


def other_process_tries(path: str, timeout_s: float) -> str:
    return subprocess.run(
        [sys.executable, "-c", TRY, path, str(timeout_s)], capture_output=True, text=True, timeout=60, check=True
    ).stdout.strip()


@pytest.mark.once  # a lock file of its own: no database
def test_a_writer_in_another_process_waits_and_fails_as_sqlite_would(tmp_path):
    lock = WriterLock(str(tmp_path / "db.sqlite3-writer"))
    lock.acquire(timeout_s=1)
    try:
        assert other_process_tries(lock.path, 0.2) == "OperationalError database is locked"
    finally:
        lock.release()
    assert other_process_tries(lock.path, 5) == "acquired"


@pytest.mark.once  # a lock file of its own: no database
def test_a_dead_process_leaves_the_lock_free(tmp_path):
    path = str(tmp_path / "db.sqlite3-writer")
    held = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR | "
            "os.O_CREAT); fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); sys.stdin.read()",
            path,
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert held.stdout.readline().strip() == "held"
        assert other_process_tries(path, 0.1) == "OperationalError database is locked"
    finally:
        held.kill()
        held.wait(timeout=30)
    assert other_process_tries(path, 5) == "acquired"


@pytest.mark.once  # a lock file of its own: no database
def test_threads_of_one_process_are_handed_the_lock_in_turn(tmp_path):
    lock = WriterLock(str(tmp_path / "db.sqlite3-writer"))
    inside, overlaps, entered = [], [], threading.Event()

    def writer(n: int) -> None:
        lock.acquire(timeout_s=30)
        try:
            inside.append(n)
            entered.set()
            if len(inside) != 1:  # somebody else held it meanwhile
                overlaps.append(list(inside))
            inside.remove(n)
        finally:
            lock.release()

    lock.acquire(timeout_s=1)
    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    assert not entered.is_set()  # they wait while this thread holds it
    lock.release()
    for t in threads:
        t.join(timeout=30)
    assert entered.is_set() and not inside and not overlaps


@pytest.mark.once  # a lock file of its own: no database
def test_a_forked_child_starts_with_the_lock_free(tmp_path):
    path = str(tmp_path / "db.sqlite3")
    lock = writer_lock(path, in_memory=False)
    lock.acquire(timeout_s=1)
    try:
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: its own open file, so the parent's flock excludes it
            try:
                child = writer_lock(path, in_memory=False)
                try:
                    child.acquire(timeout_s=0.1)
                    os.write(write, b"acquired")
                except OperationalError:
                    os.write(write, b"locked")
            finally:
                os._exit(0)
        os.close(write)
        answer = os.read(read, 100)
        os.waitpid(pid, 0)
        assert answer == b"locked"
    finally:
        lock.release()


@pytest.mark.django_db(transaction=True)
def test_an_orm_transaction_holds_the_database_lock_until_it_ends():
    if connection.vendor != "sqlite" or connection.is_in_memory_db():
        pytest.skip("SQLite files only")
    path = f"{connection.settings_dict['NAME']}-writer"
    with transaction.atomic():
        assert other_process_tries(path, 0.1) == "OperationalError database is locked"
    assert other_process_tries(path, 5) == "acquired"
    try:
        with transaction.atomic():
            raise ValueError
    except ValueError:
        pass
    assert other_process_tries(path, 5) == "acquired"


@pytest.mark.django_db(transaction=True)
def test_a_write_outside_a_transaction_queues_on_the_writer_lock_and_a_read_does_not(monkeypatch):
    """An autocommit statement (no atomic block) that writes is a transaction of its own for
    SQLite: it takes the writer lock too, through the ORM and through the hot path's cursor,
    so it never meets SQLite's busy handler. Another process holds only the writer lock here
    (not SQLite's): a write waits for it (and fails after the busy timeout), a read goes on."""
    if connection.vendor != "sqlite" or connection.is_in_memory_db():
        pytest.skip("SQLite files only")
    from brokers.models import Broker
    from transactions.queries import cursor

    Broker.objects.create(name="QW")
    connection.ensure_connection()
    monkeypatch.setitem(connection.settings_dict, "OPTIONS", {**connection.settings_dict["OPTIONS"], "timeout": 0.1})
    path = f"{connection.settings_dict['NAME']}-writer"
    hold = (
        "import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT); "
        "fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); sys.stdin.read()"
    )
    held = subprocess.Popen(
        [sys.executable, "-c", hold, path], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert held.stdout.readline().strip() == "held"
        assert not connection.in_atomic_block
        with pytest.raises(OperationalError, match="database is locked"):
            Broker.objects.filter(name="QW").update(description="orm")
        with pytest.raises(OperationalError, match="database is locked"), cursor() as c:
            c.execute("UPDATE brokers_broker SET description = %s WHERE name = %s", ["hot path", "QW"])
        assert Broker.objects.filter(name="QW").count() == 1  # reads are not queued
        with cursor() as c:
            c.execute("SELECT description FROM brokers_broker WHERE name = %s", ["QW"])
            assert c.fetchone() == ("",)
    finally:
        held.kill()
        held.wait(timeout=30)
    assert Broker.objects.filter(name="QW").update(description="orm") == 1
    with cursor() as c:
        c.execute("UPDATE brokers_broker SET description = %s WHERE name = %s", ["hot path", "QW"])
    assert Broker.objects.get(name="QW").description == "hot path"

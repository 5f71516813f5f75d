"""The write lock of a SQLite database, taken by every writer of every process before
SQLite's own.

SQLite lets one connection write at a time (``BEGIN IMMEDIATE`` takes its write lock). A
connection that finds the lock taken meets SQLite's busy handler, which sleeps 1, 2, 5, 10,
15, 20, 25 … ms between its tries, however soon the lock is freed: with the web server, the
channel agents and the workers writing one database, most of a contended write's time was
spent asleep while the database was free. Baton's writers therefore queue in front of
SQLite's lock:

* threads of one process on a ``threading.Lock`` per database (handed over at once);
* processes on an ``flock`` of ``<database>-writer``, a file beside the database, tried
  again every 50 µs–1 ms until it is free, so a writer of another process gets the
  database within a millisecond of its release.

Both are held from ``BEGIN IMMEDIATE`` to ``COMMIT`` or ``ROLLBACK``, or for a writing
statement outside any transaction (autocommit) for that statement, the span SQLite's own
lock covers, so they add no waiting of their own; SQLite's lock stays the guarantee (a
writer that does not take these, such as another program, is still waited for by the busy
handler). A process that dies releases its ``flock`` with it. The
wait is bounded by the database's busy timeout, after which the writer fails as SQLite
would ("database is locked"). In-memory databases have one process and no file: threads
only. A forked child opens the file again and starts with free locks (an ``flock`` belongs
to the open file, which a fork shares).
"""

from __future__ import annotations

import fcntl
import os
import threading
import time

from django.db import OperationalError

#: The ``flock`` is tried again after this long, doubling up to the most.
RETRY_FIRST_S = 0.00005
RETRY_MOST_S = 0.001


class WriterLock:
    """This process's place in the queue for one database's write lock."""

    def __init__(self, path: str | None):
        self.path = path
        self.threads = threading.Lock()
        self.fd: int | None = None

    def acquire(self, *, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        if not self.threads.acquire(timeout=max(0.0, timeout_s)):
            raise OperationalError("database is locked")
        if self.path is None:
            return
        try:
            self._flock(deadline)
        except BaseException:
            self.threads.release()
            raise

    def release(self) -> None:
        if self.fd is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
        self.threads.release()

    def _flock(self, deadline: float) -> None:
        if self.fd is None:
            self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        pause = RETRY_FIRST_S
        while True:
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise OperationalError("database is locked") from None
                time.sleep(pause)  # another process writes: try again soon (no wake-up exists for an flock)
                pause = min(pause * 2, RETRY_MOST_S)


_locks: dict[str, WriterLock] = {}
_locks_lock = threading.Lock()


def writer_lock(name: str, *, in_memory: bool) -> WriterLock:
    """The lock of the database ``name`` (a file path, or an in-memory name)."""
    lock = _locks.get(name)
    if lock is None:
        with _locks_lock:
            lock = _locks.setdefault(name, WriterLock(None if in_memory else f"{name}-writer"))
    return lock


def connection_writer(conn) -> tuple[WriterLock, float]:
    """The writer lock of the database behind Django connection ``conn``, and how long a
    writer waits for it (the connection's busy timeout)."""
    lock = writer_lock(conn.settings_dict["NAME"], in_memory=conn.is_in_memory_db())
    return lock, float(conn.settings_dict.get("OPTIONS", {}).get("timeout", 5))


def _forked() -> None:
    global _locks_lock
    for lock in _locks.values():
        if lock.fd is not None:
            os.close(lock.fd)  # the parent's open file: closing this copy leaves its flock alone
    _locks.clear()
    _locks_lock = threading.Lock()


os.register_at_fork(after_in_child=_forked)

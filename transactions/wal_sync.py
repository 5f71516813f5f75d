"""Group commit for SQLite: one sync of the write-ahead log for every durable commit that
finished before it, taken after the database's write lock is released.

With ``synchronous=FULL`` SQLite syncs the WAL inside ``COMMIT``, while the connection
still holds the database's only write lock: concurrent durable commits are synced one
after the other and no writer works during a sync. A durable engine step instead commits
at ``synchronous=NORMAL`` (the frames are written to the WAL, not synced) and then calls
:func:`wal_synced` before it answers: an ``fdatasync`` of the WAL file, which puts this
commit's frames, and every frame written before them, on disk. That is what ``FULL``
promises ("the WAL is synced after each committed transaction"); the difference is only
that other connections may read the commit before its sync ends, and no reply that says
committed is sent before it (docs/performance.md, "Group commit").

Threads of one process share the syncs: a thread whose commit finished while another
thread's sync was already running waits for the next sync, and a sync covers every commit
that finished before it started. Processes each sync for themselves; a sync finds only
what is not on disk yet.

A caller that must not wait (a STOMP connection's thread, which goes on with the next
frame) takes a ticket for its commit instead (:func:`wal_commit_finished`) and hands it to
:func:`wal_when_synced` with what to do once the sync covers it (send the replies that say
committed): a syncer thread of the process makes that sync, or finds it made by a waiting
caller's, and calls it back.

The WAL file can be deleted and created again (when the last connection to the database
closes); the open file is checked against the path's inode before each sync and reopened
when they differ.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable

_lock = threading.Lock()
_synced = threading.Condition(_lock)
_logs: dict[str, "_WalLog"] = {}
_counts = {"syncs": 0}
_syncer: threading.Thread | None = None
log_ = logging.getLogger(__name__)
#: A commit waiting for its sync: its WAL and its number there (:func:`wal_commit_finished`).
Ticket = tuple["_WalLog", int]


class _WalLog:
    """One database's WAL file and the state of its syncs in this process."""

    __slots__ = ("path", "fd", "inode", "finished", "covered", "syncing", "waiting")

    def __init__(self, path: str) -> None:
        self.path = path
        self.fd: int | None = None
        self.inode: tuple[int, int] | None = None
        self.finished = 0  # durable commits finished in this process, numbered
        self.covered = 0  # the highest of those numbers that a completed sync covers
        self.syncing = False
        #: (number, callback) of the commits handed to :func:`wal_when_synced`, not yet covered
        self.waiting: list[tuple[int, Callable[[BaseException | None], None]]] = []

    def sync(self) -> None:
        """fdatasync the WAL file (outside ``_lock``)."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return  # no WAL file: the commit went into the database file, synced by SQLite
        inode = (st.st_dev, st.st_ino)
        if self.fd is None or inode != self.inode:
            if self.fd is not None:
                os.close(self.fd)
                self.fd = None
            self.fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
            self.inode = inode
        os.fdatasync(self.fd)
        _counts["syncs"] += 1


def wal_syncs() -> int:
    """How many WAL syncs this process has made (for tests and the benchmark's report)."""
    return _counts["syncs"]


def wal_commit_finished(database_path: str) -> Ticket:
    """A durable commit on ``database_path`` has finished (made at ``synchronous=NORMAL``):
    its ticket, for :func:`wal_when_synced`."""
    wal_path = f"{database_path}-wal"
    with _lock:
        log = _logs.get(wal_path)
        if log is None:
            log = _logs[wal_path] = _WalLog(wal_path)
        log.finished += 1
        return log, log.finished


def wal_synced(database_path: str) -> None:
    """Return once every commit this thread has finished on ``database_path`` is on disk.

    Call it after a ``COMMIT`` made at ``synchronous=NORMAL``, before answering."""
    log, mine = wal_commit_finished(database_path)
    with _lock:
        _covered(log, mine)


def wal_when_synced(ticket: Ticket, then: Callable[[BaseException | None], None]) -> None:
    """Call ``then(None)`` once the ticket's commit is on disk (``then(error)`` if its sync
    failed), from the process's syncer thread; at once when it is already."""
    log, mine = ticket
    global _syncer
    with _lock:
        if log.covered < mine:
            log.waiting.append((mine, then))
            if _syncer is None:
                _syncer = threading.Thread(target=_syncing, name="wal-sync", daemon=True)
                _syncer.start()
            _synced.notify_all()
            return
    then(None)


def _covered(log: _WalLog, mine: int) -> None:
    """(Under ``_lock``.) Return once a sync covers commit ``mine``: this thread's own, or
    one that another thread had started after that commit finished."""
    while log.covered < mine:
        if log.syncing:
            _synced.wait()
            continue
        log.syncing = True
        upto = log.finished  # every commit finished so far is written to the WAL
        _lock.release()
        try:
            log.sync()
        finally:
            _lock.acquire()
            log.syncing = False
            _synced.notify_all()
        log.covered = max(log.covered, upto)


def _syncing() -> None:
    """The syncer thread: the syncs that :func:`wal_when_synced`'s commits wait for, then
    their callbacks (in the order of their commits), outside the lock."""
    with _lock:
        while True:
            logs = [log for log in _logs.values() if log.waiting]
            if not logs:
                _synced.wait()
                continue
            for log in logs:
                error = None
                try:
                    _covered(log, max(mine for mine, _ in log.waiting))
                except OSError as exc:
                    error = exc
                due = [then for mine, then in log.waiting if error is not None or mine <= log.covered]
                log.waiting = [(mine, then) for mine, then in log.waiting if error is None and mine > log.covered]
                _lock.release()
                try:
                    for then in due:
                        try:
                            then(error)
                        except Exception:  # a callback's own failure: the others still run
                            log_.exception("a callback after a WAL sync failed")
                finally:
                    _lock.acquire()

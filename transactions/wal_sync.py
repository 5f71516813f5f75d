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

The WAL file can be deleted and created again (when the last connection to the database
closes); the open file is checked against the path's inode before each sync and reopened
when they differ.
"""

from __future__ import annotations

import os
import threading

_lock = threading.Lock()
_synced = threading.Condition(_lock)
_logs: dict[str, "_WalLog"] = {}
_counts = {"syncs": 0}


class _WalLog:
    """One database's WAL file and the state of its syncs in this process."""

    __slots__ = ("path", "fd", "inode", "finished", "covered", "syncing")

    def __init__(self, path: str) -> None:
        self.path = path
        self.fd: int | None = None
        self.inode: tuple[int, int] | None = None
        self.finished = 0  # durable commits finished in this process, numbered
        self.covered = 0  # the highest of those numbers that a completed sync covers
        self.syncing = False

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


def wal_synced(database_path: str) -> None:
    """Return once every commit this thread has finished on ``database_path`` is on disk.

    Call it after a ``COMMIT`` made at ``synchronous=NORMAL``, before answering."""
    wal_path = f"{database_path}-wal"
    with _lock:
        log = _logs.get(wal_path)
        if log is None:
            log = _logs[wal_path] = _WalLog(wal_path)
        log.finished += 1
        mine = log.finished
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

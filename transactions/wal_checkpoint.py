"""SQLite's checkpoints, taken off the engine's steps: a thread per process copies the
write-ahead log back into the database file while the steps go on.

In WAL mode SQLite copies the log's pages into the database file (a checkpoint) inside the
``COMMIT`` that takes the log past ``wal_autocheckpoint`` pages (1,000 by default). That
commit's step still holds the database's writer lock (``transactions/sqlite_writer.py``), so
every other step of every thread waits while about a thousand pages are read back, written
and both files synced; and the session whose step drew the checkpoint waits for its reply
as long. Measured in a loop of puts under one unit of work (docs/performance.md, "SQLite's
checkpoints off the steps"), a put took about a fifth more CPU and a third more wall time
with them than without.

So each process that opens a connection to a database file runs one checkpointer thread
for it (:func:`checkpointer_started`, called as the backend opens a connection). Every
``POLL_S`` it reads the log's state from the wal-index header in the ``-shm`` file (its
format is SQLite's documented one, https://www.sqlite.org/walformat.html: ``mxFrame``, the
last valid frame, at byte 16; the checkpoint's ``nBackfill`` at byte 96; native byte
order), and once the frames not yet copied reach ``BATON_SQLITE_CHECKPOINT_PAGES`` it runs
``PRAGMA wal_checkpoint(PASSIVE)`` on a connection of its own. A passive checkpoint takes no
write lock (writers append to the log while it copies) and runs with the GIL released; the
thread is not held to the web process's CPU (``config/cpu_pin.py``), so on a machine with
more than one CPU the copying runs beside the steps, not between them. It syncs the log
before it copies and the database file after (the connection's ``synchronous`` is SQLite's
default, ``FULL``), so a log that SQLite later starts over never held the only copy of a
committed page.

The engine's connections keep SQLite's own automatic checkpoint as a backstop at
``BACKSTOP`` times the threshold: a log the thread cannot keep up with (it stopped, or a
long reader keeps it from finishing) is checkpointed inline as before, only later.
``BATON_SQLITE_CHECKPOINT_PAGES=0``, the default, turns the thread off and leaves SQLite's
own checkpoints: under steady writes a passive checkpoint beside them never finds the log
wholly copied (frames arrive while it copies), so the log never starts over and grows to
the backstop (41–42 MB in a loop of puts, against 4 MB), and the web server's CPU per
session operation came out higher with the thread than without (docs/performance.md,
"SQLite's checkpoints off the steps").

Several processes each run a thread; SQLite lets one checkpoint run at a time and answers
the others busy, which they take as "not now". The thread reopens its connection when the
path names another file (the database deleted and made again) and ends when the file is
gone. After ``fork`` the child starts afresh (threads do not survive a fork).
"""

from __future__ import annotations

import logging
import os
import sqlite3
import struct
import threading
import urllib.parse

log = logging.getLogger(__name__)

#: How often the thread reads the log's state (seconds).
POLL_S = 0.02
#: The engine's connections checkpoint inline only past this many times the threshold.
BACKSTOP = 10

_HEADER = struct.Struct("=I")  # the wal-index header's integers, in the machine's byte order
_MX_FRAME_AT = 16
_BACKFILL_AT = 96

_lock = threading.Lock()
_done = threading.Condition(_lock)
_threads: dict[str, "_Checkpointer"] = {}
_shm_fds: dict[str, tuple[tuple[int, int], int]] = {}  # -shm path: (its file, a descriptor kept open)
_counts = {"checkpoints": 0}


def _forgotten_in_child() -> None:
    global _lock, _done
    _threads.clear()  # the descriptors in _shm_fds stay open in the child: closing one would unlock
    _lock = threading.Lock()
    _done = threading.Condition(_lock)


os.register_at_fork(after_in_child=_forgotten_in_child)


def frames_pending(database_path: str) -> int | None:
    """Frames of the log not yet copied into the database file, from the wal-index header;
    None when there is no ``-shm`` file (no connection has the log open) or it is too short."""
    fd = _shm_fd(f"{database_path}-shm")
    if fd is None:
        return None
    try:
        head = os.pread(fd, _BACKFILL_AT + 4, 0)
    except OSError:
        return None
    if len(head) < _BACKFILL_AT + 4:
        return None
    (mx_frame,) = _HEADER.unpack_from(head, _MX_FRAME_AT)
    (backfilled,) = _HEADER.unpack_from(head, _BACKFILL_AT)
    return max(0, mx_frame - backfilled)


def _shm_fd(shm_path: str) -> int | None:
    """A descriptor of the ``-shm`` file, opened once per file and never closed while that
    file lives. SQLite holds POSIX record locks on it, and closing *any* descriptor of a
    file releases every such lock the process holds on it: a descriptor opened and closed
    at each look let another process find the file unused, start it over (truncated) and
    leave this process's SQLite with a mapping past its end (``SIGBUS``). A descriptor of a
    file since replaced at that path is closed: nobody can open the old one any more."""
    try:
        st = os.stat(shm_path)
    except FileNotFoundError:
        return None
    inode = (st.st_dev, st.st_ino)
    with _lock:
        held = _shm_fds.get(shm_path)
        if held is not None and held[0] == inode:
            return held[1]
        try:
            fd = os.open(shm_path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return None
        opened = os.fstat(fd)
        if held is not None:
            os.close(held[1])
        _shm_fds[shm_path] = ((opened.st_dev, opened.st_ino), fd)
        return fd


def wal_checkpoints() -> int:
    """Checkpoints this process's threads have completed (for tests and the benchmarks)."""
    return _counts["checkpoints"]


def wal_checkpoint_awaited(after: int, *, timeout_s: float) -> bool:
    """Wait until this process's threads have completed more than ``after`` checkpoints;
    False when ``timeout_s`` passed first (for tests)."""
    with _done:
        return _done.wait_for(lambda: _counts["checkpoints"] > after, timeout=timeout_s)


def checkpointer_started(database_path: str, *, pages: int) -> bool:
    """Make sure this process runs the checkpointer of ``database_path`` (a file, not an
    in-memory database); True when it does, so the caller's connection may leave
    checkpoints to it (``PRAGMA wal_autocheckpoint`` at ``BACKSTOP`` × ``pages``)."""
    if pages <= 0 or not database_path or database_path == ":memory:" or "mode=memory" in database_path:
        return False
    path = os.path.abspath(database_path)
    with _lock:
        thread = _threads.get(path)
        if thread is None or not thread.is_alive():
            thread = _threads[path] = _Checkpointer(path, pages)
            thread.start()
        thread.pages = pages  # the threshold the latest connection was opened with
    return True


def checkpointer_stopped(database_path: str, *, timeout_s: float = 10) -> bool:
    """End this process's checkpointer of ``database_path``, if any, within ``timeout_s``
    (tests; a connection opened later starts another)."""
    with _lock:
        thread = _threads.get(os.path.abspath(database_path))
    if thread is None:
        return True
    thread.stop.set()
    thread.join(timeout_s)
    return not thread.is_alive()


class _Checkpointer(threading.Thread):
    """One database's checkpointer in this process."""

    def __init__(self, path: str, pages: int) -> None:
        super().__init__(name="sqlite-checkpoint", daemon=True)
        self.path, self.pages = path, pages
        self.connection: sqlite3.Connection | None = None
        self.inode: tuple[int, int] | None = None
        self.stop = threading.Event()  # for tests: ends the thread at its next look

    def run(self) -> None:
        _unpinned()
        try:
            while not self.stop.wait(POLL_S):
                try:
                    st = os.stat(self.path)
                except FileNotFoundError:
                    return
                pending = frames_pending(self.path)
                if pending is None or pending < self.pages:
                    continue
                self.checkpoint((st.st_dev, st.st_ino))
        finally:
            with _lock:
                if _threads.get(self.path) is self:
                    del _threads[self.path]
            if self.connection is not None:
                self.connection.close()

    def checkpoint(self, inode: tuple[int, int]) -> None:
        if self.connection is None or inode != self.inode:
            if self.connection is not None:
                self.connection.close()
                self.connection = None
            # mode=rw: a file deleted since the look above is not made again, empty
            uri = f"file:{urllib.parse.quote(self.path)}?mode=rw"
            try:
                self.connection = sqlite3.connect(
                    uri, uri=True, timeout=0, isolation_level=None, check_same_thread=False
                )
            except sqlite3.OperationalError:
                return
            self.inode = inode
        try:
            self.connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        except sqlite3.OperationalError as exc:  # another process's checkpoint runs: not now
            log.debug("checkpoint of %s skipped: %s", self.path, exc)
            return
        with _done:
            _counts["checkpoints"] += 1
            _done.notify_all()


#: The thread's name as the system shows it (``top -H``, ``/proc/<pid>/task/<tid>/comm``).
SYSTEM_NAME = b"sqlite-ckpt"


def _unpinned() -> None:
    """This thread on every CPU the process was given, not only the web process's own, and
    named for the system's tools."""
    from config.cpu_pin import cpus_given

    try:
        import ctypes

        ctypes.CDLL(None).prctl(15, SYSTEM_NAME, 0, 0, 0)  # PR_SET_NAME: this thread
    except (OSError, AttributeError):
        pass

    cpus = cpus_given()
    if cpus and hasattr(os, "sched_setaffinity"):
        try:
            os.sched_setaffinity(0, cpus)  # 0: the calling thread
        except OSError:
            pass

"""The web server's CPU: each web process runs on one CPU of its own.

A Python process runs its Python code one thread at a time (the GIL), yet the web server
hands every session request from the event loop's thread to the session's thread and its
reply back, tens of hand-overs per millisecond under load. When those threads sit on
different CPUs, each hand-over wakes the other CPU, and both run with caches the other just
left: on a 2-CPU machine the chained pipeline's server took 0.52–0.61 s of CPU for its run
with pre-emptive gets at 1 ms of work, and 0.44–0.59 s with its threads kept on one CPU
(docs/performance.md, "One CPU per web process"). So at start each web process claims a CPU no other Baton web
process on this machine holds (an ``flock`` on ``<tmp>/baton-cpu/<n>.lock``, kept for the
process's life, released by the kernel when it ends) and keeps all its threads there. When
every CPU is claimed (more web processes than CPUs, the test suite's many servers) or the
machine has one, the process runs where the kernel puts it, as before.

``BATON_WEB_CPU``: ``auto`` (the default: claim as above), ``none`` (never pin), or a CPU's
number (pin there, claimed or not). Only Uvicorn's command pins (``uvicorn ...``, ``python -m
uvicorn ...`` and the workers it starts: ``uvicorn_serving``), as ``platform/up`` and the
benchmarks start the web server; a process that imports the application for itself (a test
serving it from a thread, a shell) stays where it is.
"""

from __future__ import annotations

import fcntl
import os
import sys
import tempfile
from pathlib import Path

#: Where the claims are: one lock file per CPU, machine-wide (not under var/: two platforms
#: on one machine share its CPUs).
CLAIMS = Path(tempfile.gettempdir()) / "baton-cpu"

_claim_fd: int | None = None
#: The CPUs this process was given before it pinned itself (None: never pinned).
_given: set[int] | None = None


def cpus_given() -> set[int]:
    """The CPUs this process may run on, as it was started: before ``web_cpu_pinned`` kept
    its threads on one. A thread that should not share the web process's CPU (the SQLite
    checkpointer, transactions/wal_checkpoint.py) puts itself back on these."""
    if _given is not None:
        return set(_given)
    return set(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else set()


def uvicorn_serving() -> bool:
    """Whether this process is Uvicorn's command: ``uvicorn ...`` (the console script),
    ``python -m uvicorn ...``, or a worker it spawned (which inherits its ``sys.argv``)."""
    parts = Path(sys.argv[0]).parts if sys.argv and sys.argv[0] else ()
    return parts[-1:] == ("uvicorn",) or parts[-2:] == ("uvicorn", "__main__.py")


def web_cpu_pinned(setting: str) -> int | None:
    """Pin this process's threads to one CPU as ``setting`` says; returns the CPU, or None
    when the process stays unpinned."""
    setting = (setting or "auto").strip().lower()
    if setting == "none" or not hasattr(os, "sched_setaffinity"):
        return None
    allowed = sorted(os.sched_getaffinity(0))
    if setting == "auto":
        cpu = _cpu_claimed(allowed) if len(allowed) > 1 else None
    else:
        try:
            cpu = int(setting)
        except ValueError:
            raise ValueError(f"BATON_WEB_CPU={setting}: auto, none, or a CPU's number.") from None
        if cpu not in allowed:
            raise ValueError(f"BATON_WEB_CPU={setting}: this process may run on CPUs {allowed} only.")
    if cpu is None:
        return None
    global _given
    if _given is None:
        _given = set(allowed)
    _threads_pinned(cpu)
    return cpu


def _cpu_claimed(allowed: list[int]) -> int | None:
    """The first CPU of ``allowed`` whose lock file this process could lock (kept locked)."""
    global _claim_fd
    if _claim_fd is not None:
        os.close(_claim_fd)
        _claim_fd = None
    try:
        if not CLAIMS.is_dir():
            CLAIMS.mkdir(exist_ok=True)
            CLAIMS.chmod(0o1777)  # every user's web processes claim here (sticky, as /tmp)
    except OSError:
        return None
    for cpu in allowed:
        try:
            fd = os.open(CLAIMS / f"{cpu}.lock", os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o444)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue
        _claim_fd = fd
        return cpu
    return None


def _threads_pinned(cpu: int) -> None:
    """Every thread of this process on ``cpu`` (threads started later inherit it from the
    thread that starts them)."""
    tasks = Path("/proc/self/task")
    ids = [int(t.name) for t in tasks.iterdir()] if tasks.is_dir() else [0]
    for tid in ids:
        try:
            os.sched_setaffinity(tid, {cpu})
        except OSError:
            pass  # a thread that ended meanwhile

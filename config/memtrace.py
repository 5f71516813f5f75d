"""Where a process's memory goes, for a soak that sees it grow: off by default.

With ``BATON_TRACEMALLOC`` set to a directory, the web server, each Celery worker and beat
start :mod:`tracemalloc` as they start (``BATON_TRACEMALLOC_FRAMES`` frames per allocation,
1 by default; 0 traces nothing and dumps the other figures only, cheaply)
and, every ``BATON_TRACEMALLOC_INTERVAL_S`` seconds (60) and once more as they exit, write
to that directory:

- ``memtrace-<pid>.jsonl``: one line per dump: the time, the process's resident memory,
  the bytes Python's allocations hold (traced; the tracer's own snapshots left out),
  glibc's view of its heap (``mallinfo2``: bytes in use, bytes free inside its arenas,
  bytes mmapped), the number of memory blocks Python has allocated and of threads;
- ``memtrace-<pid>.txt``: the source lines whose allocations grew most since the first
  dump (the baseline, taken once the process has warmed up), as
  ``tracemalloc.Snapshot.compare_to`` gives them.

How to read it: resident memory growing with the traced total means Python objects are
kept (the top lines name their owner); resident memory growing while the traced total and
glibc's bytes in use stay flat means the allocator's free memory is not returned (arena
fragmentation: ``MALLOC_ARENA_MAX`` bounds the arenas threads spread over). It costs
tracing every allocation (a process runs slower and holds more), so it is for diagnosis
only: ``manage.py soak --tracemalloc`` turns it on and puts the top growers in its report.
"""

from __future__ import annotations

import atexit
import ctypes
import json
import os
import sys
import threading
import time
import tracemalloc
from pathlib import Path

#: Lines listed in the ``.txt`` dump.
TOP_LINES = 25

_started = False
_lock = threading.Lock()


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


def _malloc_info() -> dict[str, int]:
    """glibc's heap: bytes in use, free inside its arenas, mmapped ({} elsewhere)."""
    try:
        libc = ctypes.CDLL(None)
        fn = libc.mallinfo2
    except (OSError, AttributeError):
        return {}
    fn.restype = _MallInfo2
    info = fn()
    return {"malloc_in_use": info.uordblks, "malloc_free": info.fordblks, "malloc_mmapped": info.hblkhd}


def _rss_bytes() -> int:
    try:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))
    except (OSError, StopIteration):
        return 0


_IGNORED = (
    tracemalloc.Filter(False, tracemalloc.__file__),
    tracemalloc.Filter(False, "<frozen importlib._bootstrap>"),
    tracemalloc.Filter(False, "<frozen importlib._bootstrap_external>"),
    tracemalloc.Filter(False, "<unknown>"),
)


class MemTrace:
    """The dumps of one process."""

    def __init__(self, directory: Path, process: str) -> None:
        self.directory = directory
        self.process = process
        self.pid = os.getpid()
        self.baseline: tracemalloc.Snapshot | None = None
        self.dumps = 0
        self.started = time.monotonic()

    @property
    def jsonl(self) -> Path:
        return self.directory / f"memtrace-{self.pid}.jsonl"

    @property
    def txt(self) -> Path:
        return self.directory / f"memtrace-{self.pid}.txt"

    def dump(self) -> None:
        with _lock:
            rss, heap = _rss_bytes(), _malloc_info()
            tracing = tracemalloc.is_tracing()
            snapshot = tracemalloc.take_snapshot().filter_traces(_IGNORED) if tracing else None
            # the program's own allocations: not the tracer's (its snapshots are traced too)
            traced = sum(s.size for s in snapshot.statistics("filename")) if snapshot else None
            self.dumps += 1
            line = {
                "process": self.process,
                "pid": self.pid,
                "t_s": round(time.monotonic() - self.started, 1),
                "rss": rss,
                **({"traced": traced} if snapshot else {}),
                # never gc.get_objects(): from another thread it can break a tuple being
                # built (a SystemError in the request that builds it)
                "blocks": sys.getallocatedblocks(),
                "threads": threading.active_count(),
                **heap,
            }
            top: list[dict] = []
            if self.baseline is None:
                self.baseline = snapshot
            elif snapshot is not None:
                top = [
                    {
                        "where": f"{s.traceback[0].filename}:{s.traceback[0].lineno}",
                        "size_diff": s.size_diff,
                        "count_diff": s.count_diff,
                        "size": s.size,
                    }
                    for s in snapshot.compare_to(self.baseline, "lineno")[:TOP_LINES]
                ]
            line["top"] = top
            with self.jsonl.open("a", encoding="utf-8") as f:
                f.write(json.dumps(line) + "\n")
            text = [
                f"{self.process} pid {self.pid} at {line['t_s']:g} s: RSS {line['rss'] / 2**20:.1f} MiB, "
                f"traced {(traced or 0) / 2**20:.1f} MiB, blocks {line['blocks']}, threads {line['threads']}",
                "growth since the first dump, by line:",
                *(f"{t['size_diff'] / 1024:+10.1f} KiB {t['count_diff']:+8d} blocks  {t['where']}" for t in top),
            ]
            self.txt.write_text("\n".join(text) + "\n", encoding="utf-8")


def memtrace_start(*, process: str) -> MemTrace | None:
    """Start tracing this process if ``BATON_TRACEMALLOC`` names a directory (once per
    process); returns the tracer, or None when tracing is off."""
    global _started
    directory = os.environ.get("BATON_TRACEMALLOC", "")
    if not directory or _started:
        return None
    _started = True
    path = Path(directory)
    path.mkdir(parents=True, exist_ok=True)
    frames = max(0, int(os.environ.get("BATON_TRACEMALLOC_FRAMES", "1")))
    interval = max(1.0, float(os.environ.get("BATON_TRACEMALLOC_INTERVAL_S", "60")))
    if frames:  # 0: the figures only, no tracing (nothing slows down)
        tracemalloc.start(frames)
    trace = MemTrace(path, process)

    def loop() -> None:
        while True:
            time.sleep(interval)  # the dump interval, not a synchronisation
            try:
                trace.dump()
            except Exception:  # noqa: BLE001 - a diagnosis must never stop the process
                pass

    threading.Thread(target=loop, name="baton-memtrace", daemon=True).start()
    atexit.register(lambda: trace.dumps and trace.dump())
    return trace

"""The garbage collector in Baton's long-running processes (the web server, the Celery worker).

Python's collector runs its youngest generation every 700 container objects allocated and
not yet freed, and from time to time a full collection that walks every object the process
holds. A put of 100 messages keeps more than 700 alive until it returns (the messages, their
rows, the journal's details), so every such put paid for a collection, and now and then for
a full one over the 110,000 objects a web process holds once Django, Channels and the
application are loaded: 330 µs per put of 100 in a run of 300 (docs/performance.md,
"The garbage collector").

So once a process has loaded what it keeps for its life, ``collector_tuned`` moves those
objects out of the collector's sight (``gc.freeze``: they are never walked again, nor
freed, which they would not be anyway) and sets the generations' thresholds from
``BATON_GC_THRESHOLD`` (three numbers, ``gc.set_threshold``'s; empty: Python's own). Cycles
of garbage are still found and freed, only later: the youngest generation holds up to the
first number of objects before it is walked.
"""

from __future__ import annotations

import gc


def collector_tuned(threshold: str) -> None:
    """Freeze what the process holds now, and set the thresholds ``threshold`` names
    (``"20000,50,100"``; ``""`` leaves Python's)."""
    gc.freeze()
    if threshold.strip():
        gc.set_threshold(*threshold_parsed(threshold))


def threshold_parsed(threshold: str) -> tuple[int, ...]:
    """``"20000,50,100"`` as ``(20000, 50, 100)``; a clear error for anything else."""
    try:
        values = tuple(int(part) for part in threshold.split(","))
    except ValueError:
        values = ()
    if len(values) != 3 or any(value < 1 for value in values):
        raise ValueError(f"BATON_GC_THRESHOLD must be three positive whole numbers, as 20000,50,100: {threshold!r}")
    return values

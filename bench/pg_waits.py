"""What the PostgreSQL server's client backends are doing while a benchmark runs, sampled:
on average how many are running, waiting for a lock, for the WAL's sync, or idle inside a
transaction waiting for their client's next statement (docs/performance.md, "PostgreSQL:
where a queue flow waits").

    python -m bench.pg_waits URL [--seconds 60] [--interval 0.02] [--json]

Samples ``pg_stat_activity`` every ``--interval`` seconds for ``--seconds`` (or until
Ctrl-C) and prints, per second of the run, the average number of client backends in each
state (``state`` and, when waiting, ``wait_event_type/wait_event``); ``idle`` backends
(outside any transaction) are left out. Run it beside ``manage.py benchmark
--database-url URL`` (the same URL) and read each second against the benchmark's progress
lines. Reads a view; takes no lock; asserts nothing.
"""

from __future__ import annotations

import argparse
import collections
import json
import time

QUERY = (
    "SELECT state, coalesce(wait_event_type || '/' || wait_event, '') FROM pg_stat_activity"
    " WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() AND state <> 'idle'"
)


def _label(state: str | None, wait: str) -> str:
    return f"{state or '?'}: {wait}" if wait else (state or "?")


def sample(url: str, *, seconds: float, interval: float):
    """Yield ``(second, {label: average backends})`` for each whole second sampled."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        start = time.monotonic()
        second, counts, samples = 0, collections.Counter(), 0
        while (now := time.monotonic() - start) < seconds:
            if int(now) != second:
                if samples:
                    yield second, {k: v / samples for k, v in counts.most_common()}
                second, counts, samples = int(now), collections.Counter(), 0
            for state, wait in conn.execute(QUERY).fetchall():
                counts[_label(state, wait)] += 1
            samples += 1
            time.sleep(interval)
        if samples:
            yield second, {k: v / samples for k, v in counts.most_common()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("url", help="the PostgreSQL server the benchmark uses (postgres://...)")
    parser.add_argument("--seconds", type=float, default=60.0, help="how long to sample (60)")
    parser.add_argument("--interval", type=float, default=0.02, help="seconds between samples (0.02)")
    parser.add_argument("--json", action="store_true", help="one JSON object per second")
    args = parser.parse_args()
    if args.seconds <= 0 or args.interval <= 0:
        parser.error("--seconds and --interval must be above 0")
    try:
        for second, averages in sample(args.url, seconds=args.seconds, interval=args.interval):
            if args.json:
                print(json.dumps({"second": second, "backends": averages}), flush=True)
            else:
                shown = ", ".join(f"{label} {n:.2f}" for label, n in averages.items()) or "-"
                print(f"{second:4d} s  {shown}", flush=True)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()

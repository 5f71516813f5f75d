"""python manage.py soak_storage: ``manage.py soak`` with small retention windows, the
database file sampled beside the processes' memory and descriptors, to show storage that
stops growing (docs/operating.md, "Storage").

The soak's platform runs with ``BATON_RESOLVED_RETENTION_S`` and ``BATON_JOURNAL_RETENTION_S``
at ``--retention-s`` (60 by default), the operating housekeeping every 5 s, and no scheduled
analytics (so no Spark job: journal events then go at twice the window, unread). Every
``--interval`` seconds the scratch SQLite file is measured: its size with its write-ahead
log, its pages in use and free, its units of work and journal rows. After the soak's own
report, a table of those samples and the least-squares growth per hour of the file and of
the pages in use after the first ``--settle-s`` seconds (the windows filling up).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

from bench.management.commands import soak
from bench.soak import slope_per_hour


class StorageSampler:
    """Samples the soak's scratch database from a thread of this process (read-only)."""

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self.rows: list[dict] = []
        self.stop = threading.Event()
        self.thread: threading.Thread | None = None
        self.started = 0.0

    def start(self, directory: Path) -> None:
        self.started = time.monotonic()
        self.thread = threading.Thread(target=self._run, args=(directory / "benchmark.sqlite3",), daemon=True)
        self.thread.start()

    def _run(self, path: Path) -> None:
        while not self.stop.wait(self.interval):
            if not path.exists():
                continue
            try:
                db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
                try:
                    pages = db.execute("PRAGMA page_count").fetchone()[0]
                    free = db.execute("PRAGMA freelist_count").fetchone()[0]
                    page = db.execute("PRAGMA page_size").fetchone()[0]
                    units = db.execute("SELECT COUNT(*) FROM transactions_transaction").fetchone()[0]
                    journal = db.execute("SELECT COUNT(*) FROM transactions_journalevent").fetchone()[0]
                finally:
                    db.close()
            except sqlite3.Error:
                continue  # not migrated yet
            wal = path.with_name(path.name + "-wal")
            self.rows.append(
                {
                    "t_s": round(time.monotonic() - self.started, 1),
                    "file_mib": round(path.stat().st_size / 2**20, 2),
                    "wal_mib": round(wal.stat().st_size / 2**20, 2) if wal.exists() else 0.0,
                    "used_mib": round((pages - free) * page / 2**20, 2),
                    "free_mib": round(free * page / 2**20, 2),
                    "units_of_work": units,
                    "journal_rows": journal,
                }
            )

    def report(self, settle_s: float) -> str:
        lines = [
            "",
            "Storage (the scratch SQLite file):",
            "   t (s)  file MiB   WAL MiB  used MiB  free MiB  units  journal",
        ]
        step = max(1, len(self.rows) // 30)
        for row in self.rows[::step] + ([self.rows[-1]] if self.rows and (len(self.rows) - 1) % step else []):
            lines.append(
                f"{row['t_s']:8.0f} {row['file_mib']:9.2f} {row['wal_mib']:9.2f} {row['used_mib']:9.2f} "
                f"{row['free_mib']:9.2f} {row['units_of_work']:6d} {row['journal_rows']:8d}"
            )
        after = [row for row in self.rows if row["t_s"] >= settle_s]
        if len(after) >= 2:
            times = [row["t_s"] for row in after]

            def growth(key: str) -> float:
                return slope_per_hour(times, [row[key] for row in after])

            lines.append(
                f"growth per hour after {settle_s:g} s: file {growth('file_mib'):+.2f} MiB, "
                f"used {growth('used_mib'):+.2f} MiB, journal rows {growth('journal_rows'):+.0f}, "
                f"units of work {growth('units_of_work'):+.0f}"
            )
        return "\n".join(lines)


class Command(soak.Command):
    help = (
        "manage.py soak with small retention windows (--retention-s), sampling the database file's size, "
        "pages in use and free, units of work and journal rows; prints their growth after --settle-s."
    )

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("--retention-s", type=int, default=60, help="Both retention windows (default 60).")
        parser.add_argument(
            "--settle-s", type=float, default=240.0, help="Growth is judged after this many seconds (default 240)."
        )

    def handle(self, *args, **options):
        import os

        os.environ.update(
            BATON_RESOLVED_RETENTION_S=str(options["retention_s"]),
            BATON_JOURNAL_RETENTION_S=str(options["retention_s"]),
            BATON_OPERATING_INTERVAL_S="5",
            BATON_ANALYTICS_INTERVAL_S="0",
        )
        sampler = StorageSampler(options["interval"])
        original = soak.Scratch

        class Sampled(original):
            def __enter__(self):
                sampler.start(self.dir)
                return super().__enter__()

        soak.Scratch = Sampled  # the soak's own scratch directory, sampled from its start
        try:
            super().handle(*args, **options)
        finally:
            soak.Scratch = original
            sampler.stop.set()
            self.stdout.write(sampler.report(options["settle_s"]))

"""python -m bench benchmark_pubsub: publications per second with many subscriptions.

Runs on a scratch database of its own (a fresh SQLite file in a temporary directory, or
the database ``--database-url`` names), never on the platform's: the measuring runs in a
child process (``--phase run``) whose DATABASE_URL points there.
"""

from __future__ import annotations

import json
import os
import platform
import shlex
import subprocess
import sys
import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from tests.support.scratch import SCRATCH_FLAG, Scratch, base_dir, url_masked

BROKER = "PUBSUB.BENCH"


def _load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


class Command(BaseCommand):
    help = (
        "Measure publications per second on a broker with many subscriptions of which few match "
        "(default: 10,000 subscriptions, 10 matching, each on its own queue; 1 KiB persistent "
        "publications outside a unit of work, each a durable database transaction putting 10 copies), "
        "beside the same publications with only the 10 matching subscriptions defined, and the time "
        "matching alone takes per publication with the subscription tree and with a scan of every filter. "
        "Works on a scratch database (a fresh SQLite file in a temporary directory unless --database-url "
        "names another, which it migrates; use a scratch database). With --json, stdout is one JSON "
        "object with the facts (command, database, machine, load) and the results."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--publications", type=int, default=400, metavar="N", help="publications per scenario (default 400)"
        )
        parser.add_argument(
            "--subscriptions",
            type=int,
            default=10_000,
            metavar="N",
            help="subscriptions defined in all (default 10000)",
        )
        parser.add_argument(
            "--matching", type=int, default=10, metavar="N", help="of which match every publication (default 10)"
        )
        parser.add_argument("--database-url", metavar="URL", help="a scratch database to run on instead of SQLite")
        parser.add_argument("--json", action="store_true", help="print JSON")
        parser.add_argument("--phase", choices=["run"], help=argparse_suppress())
        parser.add_argument("--result-file", help=argparse_suppress())

    def handle(self, *args, **options):
        if options["phase"]:
            return self._phase(options)
        started = time.monotonic()
        load_before = _load()
        command = "manage.py benchmark_pubsub " + shlex.join(
            a for a in sys.argv[2:] if not a.startswith("--database-url")
        )
        with Scratch(database_url=options["database_url"]) as scratch:
            result_file = Path(scratch.dir) / "run.json"
            child = [
                sys.executable,
                str(base_dir() / "manage.py"),
                "benchmark_pubsub",
                "--phase",
                "run",
                "--result-file",
                str(result_file),
                "--publications",
                str(options["publications"]),
                "--subscriptions",
                str(options["subscriptions"]),
                "--matching",
                str(options["matching"]),
            ]
            proc = subprocess.run(
                child, cwd=base_dir(), env=scratch.env, stdin=subprocess.DEVNULL, capture_output=True, text=True
            )
            if proc.returncode != 0 or not result_file.exists():
                raise CommandError(f"The benchmark failed (exit status {proc.returncode}):\n{proc.stderr[-3000:]}")
            results = json.loads(result_file.read_text())
            database = url_masked(scratch.database_url) if options["database_url"] else "a fresh SQLite file (WAL)"
        facts = {
            "command": command.strip(),
            "database": database,
            "durability": "a sync at every publication's commit",
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
            "load_before": load_before,
            "load_after": _load(),
            "elapsed_s": round(time.monotonic() - started, 1),
        }
        if options["json"]:
            self.stdout.write(json.dumps({"facts": facts, "results": results}, indent=2))
            return
        lines = [f"{k}: {v}" for k, v in facts.items()]
        lines.append("")
        lines.append(f"{'scenario':<48} {'publications/s':>15} {'copies/s':>10} {'ms/publication':>15}")
        for r in results["publish"]:
            lines.append(
                f"{r['scenario']:<48} {r['publications_per_s']:>15.1f} {r['copies_per_s']:>10.1f} "
                f"{r['ms_per_publication']:>15.2f}"
            )
        lines.append("")
        lines.append(f"{'matching one topic against the subscriptions':<48} {'µs/publication':>15}")
        for r in results["matching"]:
            lines.append(f"{r['scenario']:<48} {r['us_per_match']:>15.1f}")
        self.stdout.write("\n".join(lines))

    # --- the child, on the scratch database ---------------------------------------------
    def _phase(self, options) -> None:
        if os.environ.get(SCRATCH_FLAG) != "1":
            raise CommandError("--phase is internal: it runs only in the benchmark's own child process.")
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        from bench.pubsub import run

        results = run(
            publications=options["publications"],
            subscriptions=options["subscriptions"],
            matching=options["matching"],
            broker=BROKER,
        )
        Path(options["result_file"]).write_text(json.dumps(results))


def argparse_suppress():
    import argparse

    return argparse.SUPPRESS

"""python manage.py benchmark_workflows: instances of a four-step workflow completed per
second with the step workers getting normally and pre-emptively, step latency, and the time
from abort to compensated.

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

BROKER = "WORKFLOWS.BENCH"


def _load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


class Command(BaseCommand):
    help = (
        "Measure workflow instances completed per second (a four-step workflow, one worker thread per step, "
        "each getting its request under a unit of work, working 1 ms or 5 ms, completing the step and "
        "committing), with the workers getting normally and pre-emptively (the ratio between them), each "
        "step's latency p50/p99 (get to the commit's answer, a held commit included), and the time from abort "
        "to compensated for an instance with four committed steps. Works on a scratch database (a fresh SQLite "
        "file in a temporary directory unless --database-url names another). With --json, stdout is one JSON "
        "object with the facts and the results."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--instances", type=int, default=200, metavar="N", help="instances per throughput scenario (default 200)"
        )
        parser.add_argument("--rounds", type=int, default=20, metavar="N", help="aborts measured (default 20)")
        parser.add_argument("--database-url", metavar="URL", help="a scratch database to run on instead of SQLite")
        parser.add_argument("--json", action="store_true", help="print JSON")
        parser.add_argument("--phase", choices=["run"], help=argparse_suppress())
        parser.add_argument("--result-file", help=argparse_suppress())

    def handle(self, *args, **options):
        if options["phase"]:
            return self._phase(options)
        started = time.monotonic()
        load_before = _load()
        command = "manage.py benchmark_workflows " + shlex.join(
            a for a in sys.argv[2:] if not a.startswith("--database-url")
        )
        with Scratch(database_url=options["database_url"]) as scratch:
            result_file = Path(scratch.dir) / "run.json"
            child = [
                sys.executable,
                str(base_dir() / "manage.py"),
                "benchmark_workflows",
                "--phase",
                "run",
                "--result-file",
                str(result_file),
                "--instances",
                str(options["instances"]),
                "--rounds",
                str(options["rounds"]),
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
            "durability": "a sync at every commit",
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
            "load_before": load_before,
            "load_after": _load(),
            "elapsed_s": round(time.monotonic() - started, 1),
        }
        if options["json"]:
            self.stdout.write(json.dumps({"facts": facts, "results": results}, indent=2))
            return
        self.stdout.write(table(facts, results))

    # --- the child, on the scratch database ---------------------------------------------
    def _phase(self, options) -> None:
        if os.environ.get(SCRATCH_FLAG) != "1":
            raise CommandError("--phase is internal: it runs only in the benchmark's own child process.")
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        from bench.workflows import run

        results = run(instances=options["instances"], rounds=options["rounds"], broker=BROKER)
        Path(options["result_file"]).write_text(json.dumps(results))


def table(facts: dict, results: dict) -> str:
    """The report as text: the facts, then a row per throughput scenario, then the aborts."""
    lines = [f"{k}: {v}" for k, v in facts.items()]
    lines.append("")
    lines.append(f"{'scenario':<42} {'instances/s':>12} {'vs normal':>10} {'step p50 ms':>12} {'step p99 ms':>12}")
    for r in results["throughput"]:
        ratio = f"{r['ratio_to_normal']:.2f}x" if "ratio_to_normal" in r else ""
        lines.append(
            f"{r['scenario']:<42} {r['instances_per_s']:>12.1f} {ratio:>10} {r['step_p50_ms']:>12.1f} "
            f"{r['step_p99_ms']:>12.1f}"
        )
    c = results["compensation"]
    lines.append("")
    lines.append(
        f"{c['scenario']}: p50 {c['p50_ms']:.1f} ms, p99 {c['p99_ms']:.1f} ms, max {c['max_ms']:.1f} ms "
        f"over {c['rounds']} aborts"
    )
    return "\n".join(lines)


def argparse_suppress():
    import argparse

    return argparse.SUPPRESS

"""python manage.py benchmark_workflows: instances of a four-step workflow completed per
second with the step workers (``baton_client.StepWorker``) getting normally and
pre-emptively, in a closed loop (callers each waiting for their instance's end: the
instance's latency) and saturated (every instance started first), unit-of-work latency, CPU
per step, and the time from abort to compensated (scenarios: ``bench/workflows.py``).

Runs on a scratch database of its own (a fresh SQLite file in a temporary directory, or
the database ``--database-url`` names), never on the platform's: a child process
(``--phase setup``) migrates it and defines the workflows, a server serves it, and the
workers run here, over the server's API.
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
        "Measure a four-step workflow served through a server by baton_client.StepWorker (one per step, each "
        "taking up to --batch requests under a unit of work, working 1 ms or 5 ms per request, reporting each "
        "request as its function returns and committing with the last), the workers getting normally and "
        "pre-emptively (the ratio between them; rounds alternated, medians): in a closed loop, --callers callers "
        "each starting an instance and waiting for its end (instances/s, instance latency p50/p99: where "
        "pre-emptive gets pay, the steps of an instance overlapping), and saturated, every instance started first "
        "(instances/s: every worker always busy, so pre-emptive gets add nothing); for both, each unit of work's "
        "latency p50/p99 (its get's answer to its commit's), CPU per step of the server and of this process (from "
        "/proc), requests per unit of work; then the time from abort to compensated for an instance with four "
        "committed steps. "
        "Works on a scratch database (a fresh SQLite file in a temporary directory unless --database-url names "
        "another). With --json, stdout is one JSON object with the facts and the results."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--instances", type=int, default=200, metavar="N", help="instances per round of each scenario (default 200)"
        )
        parser.add_argument("--rounds", type=int, default=20, metavar="N", help="aborts measured (default 20)")
        parser.add_argument(
            "--repeat",
            type=int,
            default=3,
            metavar="N",
            help="rounds per scenario, normal and pre-emptive alternated; medians reported (default 3)",
        )
        parser.add_argument(
            "--callers",
            type=int,
            metavar="N",
            help="closed-loop callers, each waiting for its instance's end (default: --batch; at most 64; each "
            "holds a waiting get, as each of the four workers does: together at most the server's "
            "BATON_MAX_WAITS_PER_USER, 16 by default)",
        )
        parser.add_argument(
            "--batch", type=int, default=8, metavar="N", help="requests a worker takes per unit of work (default 8)"
        )
        parser.add_argument(
            "--report-every",
            type=float,
            metavar="S",
            help="the workers' report_every: seconds of work after which the steps done are reported before "
            "the commit (default: the StepWorker's, 0.002; 0: each at once; a large value: all with the commit)",
        )
        parser.add_argument(
            "--only",
            choices=["closed_loop", "saturated"],
            help="run only this scenario (and the aborts unless --rounds 0)",
        )
        parser.add_argument("--database-url", metavar="URL", help="a scratch database to run on instead of SQLite")
        parser.add_argument("--json", action="store_true", help="print JSON")
        parser.add_argument("--phase", choices=["setup"], help=argparse_suppress())
        parser.add_argument("--result-file", help=argparse_suppress())

    def handle(self, *args, **options):
        if options["phase"]:
            return self._phase(options)
        from bench.rest import server_ready
        from tests.support.scratch import process_tree_cpu_seconds
        from bench.workflows import run

        started = time.monotonic()
        load_before = _load()
        command = "manage.py benchmark_workflows " + shlex.join(
            a for a in sys.argv[2:] if not a.startswith("--database-url")
        )
        with Scratch(database_url=options["database_url"]) as scratch:
            result_file = Path(scratch.dir) / "setup.json"
            child = [
                sys.executable,
                str(base_dir() / "manage.py"),
                "benchmark_workflows",
                "--phase",
                "setup",
                "--result-file",
                str(result_file),
            ]
            proc = subprocess.run(
                child, cwd=base_dir(), env=scratch.env, stdin=subprocess.DEVNULL, capture_output=True, text=True
            )
            if proc.returncode != 0 or not result_file.exists():
                raise CommandError(f"The benchmark failed (exit status {proc.returncode}):\n{proc.stderr[-3000:]}")
            token = json.loads(result_file.read_text())["token"]
            with scratch.server() as (base_url, _command, server):
                try:
                    server_ready(base_url, token, "", alive=lambda: server.poll() is None)
                    results = run(
                        base_url=base_url,
                        token=token,
                        broker=BROKER,
                        instances=options["instances"],
                        rounds=options["rounds"],
                        repeat=options["repeat"],
                        batch=options["batch"],
                        callers=options["callers"],
                        report_every=options["report_every"],
                        only=options["only"],
                        server_cpu=lambda: process_tree_cpu_seconds(server.pid),
                        load=_load,
                    )
                except Exception as exc:
                    raise CommandError(f"The benchmark failed: {exc}\n{scratch.log_tail('server.log')}") from exc
            database = url_masked(scratch.database_url) if options["database_url"] else "a fresh SQLite file (WAL)"
        facts = {
            "command": command.strip(),
            "database": database,
            "durability": "a sync at every commit",
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
            "workers": f"baton_client.StepWorker over the session, one per step, batch {results['batch']}",
            "callers": f"{results['callers']} in the closed loop, each with its own session",
            "report_every": "the StepWorker's default"
            if options["report_every"] is None
            else f"{options['report_every']:g} s",
            "load_before": load_before,
            "load_per_round": "; ".join(results["loads"]),
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

        from brokers.services.access import api_token_issue

        call_command("migrate", verbosity=0)
        from bench.workflows import define

        define(BROKER)
        token = api_token_issue(username="workflows-bench", create_user=True, superuser=True)
        Path(options["result_file"]).write_text(json.dumps({"token": token}))


def table(facts: dict, results: dict) -> str:
    """The report as text: the facts, the closed loop's rows (where the issue's ratio is
    judged), the saturated rows, then the aborts."""
    lines = [f"{k}: {v}" for k, v in facts.items()]
    head = (
        f"{'scenario (medians)':<58} {'instances/s':>12} {'vs normal':>10} {'instance p50 ms':>16} "
        f"{'instance p99 ms':>16} {'unit p50 ms':>12} {'unit p99 ms':>12} {'server CPU ms/step':>19} "
        f"{'client CPU ms/step':>19} {'requests/unit':>14}  rounds (instances/s)"
    )
    for name, title in (
        ("closed_loop", "Closed loop: callers each start an instance and wait for its end (pre-emption pays here)"),
        ("saturated", "Saturated: every instance started first, every worker always busy (pre-emption adds nothing)"),
    ):
        if not results[name]:
            continue
        lines += ["", title, head]
        for r in results[name]:
            ratio = f"{r['ratio_to_normal']:.2f}x" if "ratio_to_normal" in r else ""
            p50 = f"{r['instance_p50_ms']:.1f}" if "instance_p50_ms" in r else "-"
            p99 = f"{r['instance_p99_ms']:.1f}" if "instance_p99_ms" in r else "-"
            lines.append(
                f"{r['scenario']:<58} {r['instances_per_s']:>12.1f} {ratio:>10} {p50:>16} {p99:>16} "
                f"{r['unit_p50_ms']:>12.1f} {r['unit_p99_ms']:>12.1f} {r['server_cpu_ms_per_step']:>19.2f} "
                f"{r['client_cpu_ms_per_step']:>19.2f} {r['requests_per_unit']:>14.1f}  {r['instances_per_s_rounds']}"
            )
    c = results["compensation"]
    if c is None:
        return "\n".join(lines)
    lines.append("")
    lines.append(
        f"{c['scenario']}: p50 {c['p50_ms']:.1f} ms, p99 {c['p99_ms']:.1f} ms, max {c['max_ms']:.1f} ms "
        f"over {c['rounds']} aborts"
    )
    return "\n".join(lines)


def argparse_suppress():
    import argparse

    return argparse.SUPPRESS

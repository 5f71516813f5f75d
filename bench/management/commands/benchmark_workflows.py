"""python manage.py benchmark_workflows: instances of a four-step workflow completed per
second with the step workers (``baton_client.StepWorker``) getting normally and
pre-emptively, step latency, CPU per step, and the time from abort to compensated.

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
        "Measure workflow instances completed per second (a four-step workflow served through a server by "
        "baton_client.StepWorker, one per step, each taking up to --batch requests under a unit of work, working "
        "1 ms or 5 ms per request, completing and committing in one call), with the workers getting normally and "
        "pre-emptively (the ratio between them; rounds alternated, medians), each step's latency p50/p99 (its "
        "get's answer to its commit's; a held commit counts when answered), CPU per step of the server and of the "
        "workers (from /proc), the server's CPU per start, and the time from abort to compensated for an instance "
        "with four committed steps. "
        "Works on a scratch database (a fresh SQLite file in a temporary directory unless --database-url names "
        "another). With --json, stdout is one JSON object with the facts and the results."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--instances", type=int, default=200, metavar="N", help="instances per throughput round (default 200)"
        )
        parser.add_argument("--rounds", type=int, default=20, metavar="N", help="aborts measured (default 20)")
        parser.add_argument(
            "--repeat",
            type=int,
            default=3,
            metavar="N",
            help="throughput rounds per scenario, normal and pre-emptive alternated; medians reported (default 3)",
        )
        parser.add_argument(
            "--batch", type=int, default=8, metavar="N", help="requests a worker takes per unit of work (default 8)"
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
    """The report as text: the facts, then a row per throughput scenario, then the aborts."""
    lines = [f"{k}: {v}" for k, v in facts.items()]
    lines.append("")
    lines.append(
        f"{'scenario (medians)':<42} {'instances/s':>12} {'vs normal':>10} {'step p50 ms':>12} {'step p99 ms':>12} "
        f"{'server CPU ms/step':>19} {'workers CPU ms/step':>20} {'server CPU ms/start':>20} {'requests/unit':>14}  "
        "rounds (instances/s)"
    )
    for r in results["throughput"]:
        ratio = f"{r['ratio_to_normal']:.2f}x" if "ratio_to_normal" in r else ""
        lines.append(
            f"{r['scenario']:<42} {r['instances_per_s']:>12.1f} {ratio:>10} {r['step_p50_ms']:>12.1f} "
            f"{r['step_p99_ms']:>12.1f} {r['server_cpu_ms_per_step']:>19.2f} {r['workers_cpu_ms_per_step']:>20.2f} "
            f"{r['server_cpu_ms_per_start']:>20.2f} {r['requests_per_unit']:>14.1f}  "
            f"{r['instances_per_s_rounds']}"
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

"""python -m bench benchmark_wakeups: latency from a commit in one process to a get
waiting in another returning, p50 and p99, per wake-up bus.

Scenarios: ``sqlite`` (a fresh SQLite file; local datagram sockets), ``postgres`` (a
throwaway PostgreSQL server; LISTEN/NOTIFY), ``postgres+redis`` (the same server and a
throwaway Redis server; publish/subscribe) and ``sqlite-poll`` (the fallback, for
comparison). Each runs in child processes on a scratch database (the command re-executed
with ``--phase run``); see bench/wakeups.py for what is measured.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sqlite3
import subprocess
import sys
import textwrap
import time
from contextlib import ExitStack
from pathlib import Path

from django.core.management.base import CommandError

from bench.report import BenchmarkError
from tests.support.scratch import SCRATCH_FLAG, Scratch, base_dir, process_stopped, sigterm_as_interrupt
from bench.wakeups import PAUSE_S, WAIT_S, WakeupResult, summary, table
from bench.management.commands.benchmark import Command as BenchmarkCommand, _python

COMMAND = "benchmark_wakeups"
SCENARIOS = ("sqlite", "postgres", "postgres+redis", "sqlite-poll")
DEFAULT_MESSAGES = 300


class Command(BenchmarkCommand):
    help = (
        "Measure the latency from a commit in one process to a get waiting in another returning (p50, p99, "
        "max, mean), for each wake-up bus: SQLite with local datagram sockets, PostgreSQL with LISTEN/NOTIFY, "
        "PostgreSQL with Redis publish/subscribe (throwaway servers, started and stopped here), and SQLite "
        'polling for comparison. With --json, stdout is JSON lines: one "facts" object, then one '
        '"result" object per scenario.'
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--messages",
            type=int,
            default=DEFAULT_MESSAGES,
            metavar="N",
            help=f"Wake-ups measured per scenario (default {DEFAULT_MESSAGES}).",
        )
        parser.add_argument("--only", choices=SCENARIOS, action="append", help="Run only this scenario (repeatable).")
        parser.add_argument("--json", action="store_true", help="Print JSON lines instead of a table.")
        parser.add_argument("--keep", action="store_true", help="Keep the scratch directories.")
        parser.add_argument("--phase", choices=("run",), help=argparse.SUPPRESS)
        parser.add_argument("--result-file", help=argparse.SUPPRESS)
        parser.add_argument("--scenario", help=argparse.SUPPRESS)

    def _phase(self, options) -> None:
        if os.environ.get(SCRATCH_FLAG) != "1":
            raise CommandError("--phase is internal: it runs only in the benchmark's own child processes.")
        from django.core.management import call_command

        from bench.wakeups import wakeup_latencies

        call_command("migrate", interactive=False, verbosity=0)
        out = wakeup_latencies(
            broker="WAKE." + options["scenario"].replace("+", "_").replace("-", "_").upper(),
            messages=options["messages"],
            env=dict(os.environ),
        )
        Path(options["result_file"]).write_text(json.dumps(out))

    def _scenario(self, scenario: str, *, database_url: str | None, redis_url: str, options) -> WakeupResult:
        with Scratch(database_url=database_url, keep=options["keep"]) as scratch:
            env = {
                **scratch.env,
                "BATON_REDIS_URL": redis_url,
                "BATON_WAKEUP_REDIS_URL": "",
                "BATON_WAKEUPS": "poll" if scenario == "sqlite-poll" else "auto",
            }
            result_file = scratch.dir / "wakeups.json"
            args = [
                sys.executable,
                str(base_dir() / "manage.py"),
                COMMAND,
                "--phase",
                "run",
                "--scenario",
                scenario,
                "--messages",
                str(options["messages"]),
                "--result-file",
                str(result_file),
            ]
            with open(scratch.dir / "wakeups.log", "wb") as log:
                proc = subprocess.Popen(args, cwd=base_dir(), env=env, stdin=subprocess.DEVNULL, stdout=log)
                try:
                    code = proc.wait()
                finally:
                    process_stopped(proc, grace_s=5)
            if code != 0 or not result_file.exists():
                raise BenchmarkError(
                    f"{scenario}: the run failed (exit status {code}): {shlex.join(args)}\n"
                    f"{scratch.log_tail('wakeups.log')}".rstrip()
                )
            out = json.loads(result_file.read_text())
        return summary(
            scenario=scenario,
            bus=out["bus"],
            latencies_ms=out["latencies_ms"],
            heard_ms=out["heard_ms"],
            timeouts=out["timeouts"],
        )

    def handle(self, *args, **options):
        if options["phase"]:
            return self._phase(options)
        if options["messages"] < 1:
            raise CommandError("--messages must be at least 1.")
        scenarios = [s for s in SCENARIOS if not options["only"] or s in options["only"]]
        command = [_python(), "manage.py", COMMAND, "--messages", str(options["messages"])]
        command += [arg for s in options["only"] or [] for arg in ("--only", s)]
        command += ["--json"] if options["json"] else []
        facts = {"load_start": self._load(), "servers": []}
        results: list[WakeupResult] = []
        failure = None
        started = time.monotonic()
        with sigterm_as_interrupt():
            try:
                with ExitStack() as stack:
                    pg_url = redis_url = None
                    for scenario in scenarios:
                        if scenario.startswith("postgres") and pg_url is None:
                            from tests.support.pgserver import postgres_server

                            self._progress(options, f"{COMMAND}: starting a throwaway PostgreSQL server")
                            server = stack.enter_context(postgres_server(keep=options["keep"]))
                            pg_url = server.url
                            facts["servers"].append(server.describe())
                        if scenario == "postgres+redis" and redis_url is None:
                            from tests.support.redisserver import redis_server

                            self._progress(options, f"{COMMAND}: starting a throwaway Redis server")
                            server = stack.enter_context(redis_server())
                            redis_url = server.database(0)
                            facts["servers"].append(server.describe())
                        self._progress(options, f"{COMMAND}: {scenario}, {options['messages']} wake-ups")
                        results.append(
                            self._scenario(
                                scenario,
                                database_url=pg_url if scenario.startswith("postgres") else None,
                                redis_url=redis_url if scenario == "postgres+redis" else "",
                                options=options,
                            )
                        )
            except KeyboardInterrupt:
                failure = "Interrupted (the servers, if started, are stopped)."
            except BenchmarkError as exc:
                failure = str(exc)
        facts.update(
            load_end=self._load(),
            elapsed_s=round(time.monotonic() - started, 3),
            command=shlex.join(command),
            machine=self._machine(),
            sqlite=sqlite3.sqlite_version,
            error=failure,
        )
        if options["json"]:
            rows = [{"kind": "facts", **facts}] + [r.as_dict() for r in results]
            self.stdout.write("\n".join(json.dumps(row) for row in rows))
        else:
            self.stdout.write(self._text(results, facts))
        if failure:
            raise CommandError(failure)

    @staticmethod
    def _text(results: list[WakeupResult], facts: dict) -> str:
        lines = (
            [
                "Baton wake-up benchmark: a commit in one process -> a get waiting in another returns",
                f"command:   {facts['command']}",
                f"machine:   {facts['machine']}, SQLite {facts['sqlite']}",
                f"load avg:  {facts['load_start']} at the start, {facts['load_end']} at the end (1 min)",
                f"elapsed:   {facts['elapsed_s']:.1f} s",
            ]
            + [f"server:    {s}" for s in facts["servers"]]
            + [
                "",
                table(results) if results else "(no scenario completed)",
                "",
            ]
        )
        explained = (
            "Latency: from an immediate put (one committing database transaction) returning in the committer "
            "process to the waiting get returning in the waiter process, on the machine's monotonic clock; it "
            "includes the waiter's get taking the message. The committer pauses "
            f"{PAUSE_S[0] * 1000:g}-{PAUSE_S[1] * 1000:g} ms before each put so that the get is waiting. "
            "heard: from the same put returning to the waiter's wake-up listener hearing of the commit (the bus "
            "alone; negative when it heard before the put call returned: NOTIFY is delivered at the commit). "
            f"timeouts: gets that waited the whole {WAIT_S:g} s (lost wake-ups). Each scenario on a fresh database."
        )
        return "\n".join(lines + [textwrap.fill(explained, width=100, break_on_hyphens=False)])

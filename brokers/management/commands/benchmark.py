"""python manage.py benchmark: messages per second on the put and get paths.

Runs on a scratch database of its own (a fresh SQLite file in a temporary directory, or
the database ``--database-url`` names), never on the platform's. See brokers/benchmark/.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import secrets
import shlex
import sqlite3
import sys
import time
from pathlib import Path

import django
from django.core.management.base import BaseCommand, CommandError

from brokers.benchmark.report import BATCH_MESSAGES_FACTOR, BenchmarkError, Result, table
from brokers.benchmark.scratch import SCRATCH_FLAG, Scratch, base_dir, sigterm_as_interrupt, url_masked

#: About a minute and a half for the whole run on a 2-core machine with SQLite.
DEFAULT_MESSAGES = 800
BENCH_USER = "baton-benchmark"
PHASES = ("setup", "inprocess", "cleanup")


def _python() -> str:
    """The interpreter, relative to the project when it is the project's virtualenv."""
    exe = Path(sys.executable)
    try:
        return str(exe.relative_to(base_dir()))
    except ValueError:
        return str(exe)


class Command(BaseCommand):
    help = (
        "Measure messages per second for put+commit and get+commit of 1 KiB persistent messages, "
        "one message and 100 messages per unit of work, in-process (services called directly) and "
        "through the REST API (a Uvicorn server started on a free loopback port; 1 and 8 clients). "
        "Works on a scratch database: a fresh SQLite file in a temporary directory unless "
        "--database-url names another (which it migrates and where it defines a broker of its own, "
        "removed at the end)."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--messages", type=int, default=DEFAULT_MESSAGES, metavar="N",
            help=f"Messages each one-message-per-unit-of-work scenario puts and then gets (default "
                 f"{DEFAULT_MESSAGES}); the batch-of-100 scenarios move {BATCH_MESSAGES_FACTOR} times as many. "
                 "Rounded up so that every client does the same number of whole units of work.",
        )
        parser.add_argument(
            "--database-url", metavar="URL",
            help="Benchmark this database (e.g. postgres://user:pw@127.0.0.1/scratch) instead of a fresh "
                 "SQLite file. Use a scratch database: it is migrated.",
        )
        parser.add_argument("--only", choices=["inprocess", "rest"], help="Run only these scenarios.")
        parser.add_argument("--keep", action="store_true", help="Keep the scratch directory (database, server log).")
        # The command re-runs itself as a child on the scratch database for these.
        parser.add_argument("--phase", choices=PHASES, help=argparse.SUPPRESS)
        parser.add_argument("--result-file", help=argparse.SUPPRESS)
        parser.add_argument("--broker", help=argparse.SUPPRESS)
        parser.add_argument("--username", help=argparse.SUPPRESS)

    # --- the child phases, on the scratch database -----------------------------------------

    def _phase(self, options) -> None:
        if os.environ.get(SCRATCH_FLAG) != "1":
            raise CommandError("--phase is internal: it runs only in the benchmark's own child processes.")
        from brokers.benchmark.inprocess import run_inprocess, scratch_cleanup, scratch_setup

        phase, broker = options["phase"], options["broker"]
        if phase == "setup":
            result = scratch_setup(broker=broker, username=options["username"])
        elif phase == "inprocess":
            results = run_inprocess(broker=broker, messages=options["messages"], progress=options["verbosity"] >= 1)
            result = {"results": [r.as_dict() for r in results]}
        else:
            scratch_cleanup(broker=broker)
            result = {}
        Path(options["result_file"]).write_text(json.dumps(result))

    # --- the benchmark ----------------------------------------------------------------------

    def _progress(self, options, text: str) -> None:
        if options["verbosity"] >= 1:
            self.stderr.write(text)
            self.stderr.flush()

    def handle(self, *args, **options):
        if options["phase"]:
            return self._phase(options)
        messages = options["messages"]
        if messages < 1:
            raise CommandError("--messages must be at least 1.")
        only, database_url = options["only"], options["database_url"]
        command = [_python(), "manage.py", "benchmark", "--messages", str(messages)]
        command += ["--only", only] if only else []
        command += ["--database-url", url_masked(database_url)] if database_url else []
        broker = f"BENCH.{secrets.token_hex(4).upper()}"

        results: list[Result] = []
        facts = {"server": "(not started)", "load": self._load()}
        started = time.monotonic()
        failure: str | None = None
        with sigterm_as_interrupt():
            try:
                with Scratch(database_url=database_url, keep=options["keep"]) as scratch:
                    self._progress(options, f"benchmark: scratch directory {scratch.dir}")
                    facts["database"] = self._database_facts(scratch)
                    try:
                        self._progress(options, "benchmark: migrating the scratch database and defining queues")
                        token = scratch.phase("setup", broker=broker, username=BENCH_USER,
                                              verbosity=options["verbosity"])["token"]
                        if only in (None, "inprocess"):
                            out = scratch.phase("inprocess", broker=broker, messages=messages,
                                                verbosity=options["verbosity"])
                            results += [Result(**r) for r in out["results"]]
                        if only in (None, "rest"):
                            results += self._rest(scratch, options, token=token, broker=broker, facts=facts)
                    finally:
                        if not scratch.own_database:
                            try:
                                scratch.phase("cleanup", broker=broker, verbosity=0)
                            except BenchmarkError as exc:
                                self.stderr.write(f"benchmark: could not remove broker {broker}: {exc}")
                    if options["keep"]:
                        self._progress(options, f"benchmark: kept {scratch.dir}")
            except KeyboardInterrupt:
                failure = "Interrupted (the server, if started, is stopped)."
            except BenchmarkError as exc:
                failure = str(exc)

        self.stdout.write(self._report(results, command=command, facts=facts, elapsed=time.monotonic() - started))
        if failure:
            raise CommandError(failure)

    def _rest(self, scratch: Scratch, options, *, token: str, broker: str, facts: dict) -> list[Result]:
        from brokers.benchmark.rest import run_rest, server_ready

        with scratch.server() as (base_url, command, proc):
            facts["server"] = shlex.join(["python"] + command[1:])
            self._progress(options, f"benchmark: server {base_url} (log: {scratch.dir / 'server.log'})")
            try:
                server_ready(base_url, token, broker, alive=lambda: proc.poll() is None)
                return run_rest(base_url=base_url, token=token, broker=broker, messages=options["messages"],
                                progress=options["verbosity"] >= 1)
            except BenchmarkError as exc:
                raise BenchmarkError(f"{exc}\nserver log:\n{scratch.log_tail('server.log')}") from exc

    @staticmethod
    def _database_facts(scratch: Scratch) -> str:
        if scratch.own_database:
            return f"SQLite {sqlite3.sqlite_version} (WAL, IMMEDIATE), a fresh file in a temporary directory"
        return url_masked(scratch.database_url)

    @staticmethod
    def _load() -> str:
        """The 1-minute load average: figures measured on a busy machine are low."""
        try:
            one = os.getloadavg()[0]
        except OSError:
            return "unknown"
        return f"{one:.2f}"

    @staticmethod
    def _report(results: list[Result], *, command: list[str], facts: dict, elapsed: float) -> str:
        lines = [
            "Baton benchmark: 1 KiB persistent messages; a unit of work is begin + put (or get) + commit",
            f"command:   {shlex.join(command)}",
            f"database:  {facts.get('database', '')}",
            f"server:    {facts['server']}",
            f"machine:   {platform.system()} {platform.machine()}, {os.cpu_count()} CPUs, "
            f"Python {platform.python_version()}, Django {django.get_version()}",
            f"load avg:  {facts['load']} at the start, {Command._load()} at the end (1 min; other work on "
            "the machine lowers every figure)",
            f"elapsed:   {elapsed:.1f} s",
            "",
            table(results) if results else "(no scenario completed)",
            "",
            "batch: messages per unit of work; REST: 3 requests per unit of work (begin, put or get, commit), "
            "clients are threads each with its own keep-alive connection.",
        ]
        return "\n".join(lines)

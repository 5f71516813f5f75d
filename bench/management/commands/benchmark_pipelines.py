"""python manage.py benchmark_pipelines: end-to-end times of pipelines of units of work,
pre-emptive gets off and on.

Runs on a scratch database of its own (a fresh SQLite file in a temporary directory, or
the database ``--database-url`` names), never on the platform's, in child processes (the
command re-executed with ``--phase``) like ``python manage.py benchmark``. See
bench/pipelines.py for the scenarios.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import secrets
import shlex
import subprocess
import sys
import textwrap
import time
from contextlib import contextmanager
from pathlib import Path

import django
from django.core.management.base import CommandError

from bench.pipelines import (
    AGENT_STOP_S,
    CHANNEL_BATCH_INTERVAL_MS,
    CHANNEL_BATCH_SIZE,
    CHANNEL_WINDOW,
    GET_BATCH,
    IN_PROCESS,
    RUN_TIMEOUT_S,
    SCENARIOS,
    THROUGH_SERVER,
    PipelineResult,
    table,
)
from bench.report import BenchmarkError
from tests.support.scratch import (
    SCRATCH_FLAG,
    Scratch,
    base_dir,
    process_stopped,
    process_tree_cpu_seconds,
    sigterm_as_interrupt,
    url_masked,
)
from bench.management.commands.benchmark import BENCH_USER, Command as BenchmarkCommand, _python

DEFAULT_STAGES = 4
DEFAULT_MESSAGES = 100
DEFAULT_WORK_MS = 1.0
PHASES = ("setup", "run", "cleanup")
COMMAND = "benchmark_pipelines"


def phase_run(scratch: Scratch, name: str, **options) -> dict:
    """Run this command again as a child on the scratch database (``--phase name``) and
    return the JSON it leaves in its result file. (``Scratch.phase`` does the same for
    ``benchmark`` alone: it names that command.)"""
    result_file = scratch.dir / f"pipelines-{name}.json"
    args = [sys.executable, str(base_dir() / "manage.py"), COMMAND, "--phase", name, "--result-file", str(result_file)]
    for key, value in options.items():
        if value is True:  # a flag
            args.append(f"--{key.replace('_', '-')}")
        elif value is not None and value is not False:
            args += [f"--{key.replace('_', '-')}", str(value)]
    log_name = f"pipelines-{name}.log"
    with open(scratch.dir / log_name, "wb") as log:
        # the child's stderr (its progress, and a traceback if it fails) is shared with ours;
        # its stdout goes to a log file so that our stdout stays the report
        proc = subprocess.Popen(args, cwd=base_dir(), env=scratch.env, stdin=subprocess.DEVNULL, stdout=log)
        try:
            code = proc.wait()
        finally:
            process_stopped(proc, grace_s=5)
    if code != 0 or not result_file.exists():
        raise BenchmarkError(
            f"The {name} phase failed (exit status {code}): {shlex.join(args)}\n{scratch.log_tail(log_name)}".rstrip()
        )
    return json.loads(result_file.read_text())


class Command(BenchmarkCommand):
    help = (
        "Measure end-to-end times of pipelines of units of work with pre-emptive gets off and on: a chain "
        "of stages (a producer and k consumer-producers, one unit of work each) and the request-reply of "
        "two applications on two brokers linked by two channels. Works on a scratch database: a fresh "
        "SQLite file in a temporary directory unless --database-url names another (which it migrates and "
        "where it defines brokers and channels of its own, removed at the end)."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--stages",
            type=int,
            default=DEFAULT_STAGES,
            metavar="K",
            help=f"Consumer stages after the producer in the chain (default {DEFAULT_STAGES}).",
        )
        parser.add_argument(
            "--messages",
            type=int,
            default=DEFAULT_MESSAGES,
            metavar="N",
            help=f"Messages through each pipeline (default {DEFAULT_MESSAGES}).",
        )
        parser.add_argument(
            "--work-ms",
            type=float,
            default=DEFAULT_WORK_MS,
            metavar="W",
            help=f"Work per message per stage, in milliseconds, done as a sleep (waiting, like "
            f"an I/O call) (default {DEFAULT_WORK_MS:g}).",
        )
        parser.add_argument("--only", choices=SCENARIOS, help="Run only this scenario.")
        parser.add_argument(
            "--batch-interval-ms",
            type=int,
            default=CHANNEL_BATCH_INTERVAL_MS,
            metavar="I",
            help="The request-reply channels' batch interval (default: a channel's default, "
            f"{CHANNEL_BATCH_INTERVAL_MS}).",
        )
        parser.add_argument(
            "--window",
            type=int,
            default=CHANNEL_WINDOW,
            metavar="B",
            help="The request-reply channels' window: provisional batches in flight at once "
            f"(default: a channel's default, {CHANNEL_WINDOW}; at most 64).",
        )
        parser.add_argument(
            "--database-url",
            metavar="URL",
            help="Benchmark this database (e.g. postgres://user:pw@127.0.0.1/scratch) instead of a fresh "
            "SQLite file. Use a scratch database: it is migrated.",
        )
        parser.add_argument(
            "--long-uow-ms",
            type=float,
            default=0,
            metavar="L",
            help="request-reply (in process): one more unit of work on A puts a message through "
            "channel A.TO.B at the start and commits only after L ms, holding the channel's "
            "oldest batch while the requests' batches behind it are ready (default 0: none).",
        )
        parser.add_argument(
            "--no-warm-up",
            action="store_true",
            help="Skip the warm-up runs (a tiny run of each scenario each way before it is measured): "
            "the measured runs then include first-use costs (imports, first connections). For checking "
            "that the command works (its tests), not for figures.",
        )
        parser.add_argument(
            "--repeat",
            type=int,
            default=1,
            metavar="R",
            help="Runs of each scenario both ways, off and on alternated; off/on from the medians (default 1).",
        )
        parser.add_argument("--keep", action="store_true", help="Keep the scratch directory (database, logs).")
        # The command re-runs itself as a child on the scratch database for these.
        parser.add_argument("--phase", choices=PHASES, help=argparse.SUPPRESS)
        parser.add_argument("--result-file", help=argparse.SUPPRESS)
        parser.add_argument("--prefix", help=argparse.SUPPRESS)

    # --- the child phases, on the scratch database -----------------------------------------

    def _phase(self, options) -> None:
        if os.environ.get(SCRATCH_FLAG) != "1":
            raise CommandError("--phase is internal: it runs only in the benchmark's own child processes.")
        from django.core.management import call_command

        from bench.pipelines import pipelines_cleanup, run_pipelines

        phase = options["phase"]
        if phase == "setup":
            from brokers.services.access import api_token_issue

            call_command("migrate", interactive=False, verbosity=0)
            result: dict = {"token": api_token_issue(username=BENCH_USER, create_user=True, superuser=True)}
        elif phase == "run":
            results: list[PipelineResult] = []
            result = {}
            try:
                run_pipelines(
                    prefix=options["prefix"],
                    stages=options["stages"],
                    messages=options["messages"],
                    work_ms=options["work_ms"],
                    only=options["only"],
                    progress=options["verbosity"] >= 1,
                    results=results,
                    batch_interval_ms=options["batch_interval_ms"],
                    window=options["window"],
                    long_uow_ms=options["long_uow_ms"],
                    warm_up=not options["no_warm_up"],
                    repeat=options["repeat"],
                )
            except BenchmarkError as exc:  # the runs that finished are still worth printing
                result["error"] = str(exc)
            result["results"] = [r.as_dict() for r in results]
        else:
            pipelines_cleanup(prefix=options["prefix"])
            result = {}
        Path(options["result_file"]).write_text(json.dumps(result))

    # --- the benchmark ----------------------------------------------------------------------

    def handle(self, *args, **options):
        if options["phase"]:
            return self._phase(options)
        stages, messages, work_ms = options["stages"], options["messages"], options["work_ms"]
        if stages < 1:
            raise CommandError("--stages must be at least 1.")
        if messages < 1:
            raise CommandError("--messages must be at least 1.")
        if not 0 <= work_ms <= 1000:
            raise CommandError("--work-ms must be from 0 to 1000.")
        interval = options["batch_interval_ms"]
        if not 0 <= interval <= 60_000:
            raise CommandError("--batch-interval-ms must be from 0 to 60000.")
        window = options["window"]
        if not 1 <= window <= 64:
            raise CommandError("--window must be from 1 to 64.")
        long_uow_ms = options["long_uow_ms"]
        if not 0 <= long_uow_ms <= 600_000:
            raise CommandError("--long-uow-ms must be from 0 to 600000.")
        repeat = options["repeat"]
        if not 1 <= repeat <= 20:
            raise CommandError("--repeat must be from 1 to 20.")
        only, database_url = options["only"], options["database_url"]
        command = [
            _python(),
            "manage.py",
            COMMAND,
            "--stages",
            str(stages),
            "--messages",
            str(messages),
            "--work-ms",
            f"{work_ms:g}",
        ]
        command += ["--only", only] if only else []
        command += ["--batch-interval-ms", str(interval)] if interval != CHANNEL_BATCH_INTERVAL_MS else []
        command += ["--window", str(window)] if window != CHANNEL_WINDOW else []
        command += ["--long-uow-ms", f"{long_uow_ms:g}"] if long_uow_ms else []
        command += ["--database-url", url_masked(database_url)] if database_url else []
        command += ["--no-warm-up"] if options["no_warm_up"] else []
        command += ["--repeat", str(repeat)] if repeat != 1 else []
        prefix = f"BP{secrets.token_hex(3).upper()}"

        results: list[PipelineResult] = []
        facts = {"load": self._load()}
        started = time.monotonic()
        failure: str | None = None
        with sigterm_as_interrupt():
            try:
                with Scratch(database_url=database_url, keep=options["keep"]) as scratch:
                    self._progress(options, f"{COMMAND}: scratch directory {scratch.dir}")
                    facts["database"] = self._database_facts(scratch)
                    try:
                        self._progress(options, f"{COMMAND}: migrating the scratch database")
                        token = phase_run(scratch, "setup", verbosity=0)["token"]
                        if only in (None, *IN_PROCESS):
                            out = phase_run(
                                scratch,
                                "run",
                                prefix=prefix,
                                stages=stages,
                                messages=messages,
                                work_ms=work_ms,
                                only=only,
                                verbosity=options["verbosity"],
                                batch_interval_ms=options["batch_interval_ms"],
                                window=window,
                                long_uow_ms=long_uow_ms or None,
                                no_warm_up=options["no_warm_up"],
                                repeat=repeat,
                            )
                            results = [PipelineResult(**r) for r in out["results"]]
                            if out.get("error"):
                                raise BenchmarkError(out["error"])
                        if only in (None, *THROUGH_SERVER):
                            self._through_server(scratch, options, token=token, prefix=prefix, results=results)
                    finally:
                        if not scratch.own_database:
                            try:
                                phase_run(scratch, "cleanup", prefix=prefix, verbosity=0)
                            except BenchmarkError as exc:
                                self.stderr.write(f"{COMMAND}: could not remove the {prefix}.* brokers: {exc}")
                    if options["keep"]:
                        self._progress(options, f"{COMMAND}: kept {scratch.dir}")
            except KeyboardInterrupt:
                failure = "Interrupted."
            except BenchmarkError as exc:
                failure = str(exc)

        self.stdout.write(
            self._report(
                results,
                command=command,
                facts=facts,
                elapsed=time.monotonic() - started,
                stages=stages,
                messages=messages,
                work_ms=work_ms,
                only=only,
                batch_interval_ms=interval,
                window=window,
                long_uow_ms=long_uow_ms,
                repeat=repeat,
            )
        )
        if failure:
            raise CommandError(failure)

    def _through_server(
        self, scratch: Scratch, options, *, token: str, prefix: str, results: list[PipelineResult]
    ) -> None:
        """The scenarios through the API: a server on the scratch database, the applications
        in this process (the channels' agents in processes of their own)."""
        from bench.pipelines_request_reply import run_request_reply_pipelines
        from bench.pipelines_session import run_session_pipelines
        from bench.rest import server_ready

        only = options["only"]
        with scratch.server() as (base_url, _command, proc):
            self._progress(options, f"{COMMAND}: server {base_url} (log: {scratch.dir / 'server.log'})")
            try:
                server_ready(base_url, token, "", alive=lambda: proc.poll() is None)
                if only in (None, "chain-session"):
                    run_session_pipelines(
                        base_url=base_url,
                        token=token,
                        prefix=prefix,
                        stages=options["stages"],
                        messages=options["messages"],
                        work_ms=options["work_ms"],
                        progress=options["verbosity"] >= 1,
                        results=results,
                        server_cpu=lambda: process_tree_cpu_seconds(proc.pid),
                        warm_up=not options["no_warm_up"],
                        repeat=options["repeat"],
                    )
                run_request_reply_pipelines(
                    base_url=base_url,
                    token=token,
                    prefix=prefix,
                    messages=options["messages"],
                    work_ms=options["work_ms"],
                    agents=lambda names: _agents(scratch, names),
                    scenarios=[s for s in THROUGH_SERVER if s.startswith("request-reply") and only in (None, s)],
                    progress=options["verbosity"] >= 1,
                    results=results,
                    batch_interval_ms=options["batch_interval_ms"],
                    window=options["window"],
                    warm_up=not options["no_warm_up"],
                    repeat=options["repeat"],
                )
            except BenchmarkError as exc:
                raise BenchmarkError(f"{exc}\nserver log:\n{scratch.log_tail('server.log')}") from exc

    @staticmethod
    def _report(
        results: list[PipelineResult],
        *,
        command: list[str],
        facts: dict,
        elapsed: float,
        stages: int,
        messages: int,
        work_ms: float,
        only: str | None,
        batch_interval_ms: int,
        window: int,
        long_uow_ms: float = 0,
        repeat: int = 1,
    ) -> str:
        per_stage = messages * work_ms
        lines = [
            "Baton pipeline benchmark: end-to-end time of chained units of work, pre-emptive gets off and on",
            f"command:   {shlex.join(command)}",
            f"database:  {facts.get('database', '')}",
            (
                f"machine:   {platform.system()} {platform.machine()}, {os.cpu_count()} CPUs, "
                f"Python {platform.python_version()}, Django {django.get_version()}"
            ),
            (
                f"load avg:  {facts['load']} at the start, {BenchmarkCommand._load()} at the end (1 min; other work on "
                "the machine lowers every figure)"
            ),
            f"elapsed:   {elapsed:.1f} s",
            "",
            table(results) if results else "(no scenario completed)",
            "",
        ]
        described = {
            "chain": (
                f"chain: stage 0 puts N messages on S0 in one unit of work ({work_ms:g} ms of work before each put); "
                f"stages 1..K each get from the stage before (batch up to {GET_BATCH}, waiting), work {work_ms:g} ms "
                "per message, put it on their own queue and commit with a wait, one unit of work each. "
                "seconds: from stage 0's start until stage K's unit of work has committed. The work alone is "
                f"N x W = {per_stage:g} ms per stage, {(stages + 1) * per_stage:g} ms for the {stages + 1} stages one "
                "after another."
            ),
            "chain-session": (
                "chain-session: the same chain, each stage an application with its own session "
                "through the Python client to a Uvicorn server on the scratch database (puts pipelined; gets and "
                "commits wait for their replies)."
            ),
            "request-reply-session": (
                "request-reply-session: the same request-reply, each application with its own "
                "session through the Python client to the Uvicorn server (puts pipelined); brokers, queues and "
                "channels defined and started through REST, each channel's agent in a process of its own "
                "(manage.py channel_run, as a worker runs it)."
            ),
            "request-reply-rest": (
                "request-reply-rest: the same, each application through the Python client over "
                "REST (one HTTP request per operation)."
            ),
            "request-reply": (
                f"request-reply: App1 on broker A puts N requests (REQ -> channel A.TO.B -> B/REQ.IN) in one unit of "
                f"work; App2 on B gets them as they come, works {work_ms:g} ms on each and puts a reply (REPLY -> "
                "channel B.TO.A -> A/REPLY.IN) in one unit of work; App1' on A gets the N replies in one unit of work "
                f"and commits with a wait. Channels: in-process transport, batch size {CHANNEL_BATCH_SIZE}, batch "
                f"interval {batch_interval_ms} ms, window {window} batches, pre-emptive like the applications, "
                f"each agent "
                "in a thread. "
                "seconds: from App1's start until App1' has committed."
                + (
                    f" A long unit of work on A (--long-uow-ms {long_uow_ms:g}) puts one message through channel "
                    "A.TO.B "
                    "(to B/SIDE.IN) at the start and commits after that long: with pre-emptive gets the channel's "
                    "oldest "
                    "batch is held on it; the requests' batches behind it settle as soon as App1 commits, not after it."
                    if long_uow_ms
                    else ""
                )
            ),
        }
        texts = [described[s] for s in SCENARIOS if only in (None, s)] + [
            "msgs/s: N / seconds. off/on: how many times shorter the end-to-end time is with pre-emptive gets. "
            + (
                f"{repeat} runs of each, off and on alternated, a row each; off s and on s are their medians"
                if repeat > 1
                else "One run of each"
            )
            + f"; every wait bounded by {RUN_TIMEOUT_S:g} s.",
        ]
        lines += [textwrap.fill(t, width=100, subsequent_indent="  ", break_on_hyphens=False) for t in texts]
        notes = [_notes(r) for r in results]
        if any(notes):
            lines += ["", "per run (seconds after the start):"] + [n for n in notes if n]
        return "\n".join(lines)


@contextmanager
def _agents(scratch: Scratch, names: list[str]):
    """The agents of these channels, each a ``manage.py channel_run`` process on the scratch
    database, for the length of the block; the caller stops the channels on the way out (the
    agents notice within their idle wait), and what is still running after AGENT_STOP_S is
    stopped."""
    procs = []
    try:
        for name in names:
            log = open(scratch.dir / f"agent-{len(procs)}.log", "ab")
            procs.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        str(base_dir() / "manage.py"),
                        "channel_run",
                        name,
                        "--seconds",
                        f"{RUN_TIMEOUT_S + 120:g}",
                    ],
                    cwd=base_dir(),
                    env=scratch.env,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            )
            log.close()
        yield procs
    finally:
        stop_by = time.monotonic() + AGENT_STOP_S
        for proc in procs:
            try:
                proc.wait(max(0.1, stop_by - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            process_stopped(proc, grace_s=5)


def _notes(result: PipelineResult) -> str:
    notes = result.notes or {}
    parts = [
        f"{name} {t:.3f}" if name.endswith("to commit") or " got the " in name else f"{name} committed {t:.3f}"
        for name, t in notes.get("committed_at_s", {}).items()
    ]
    held = notes.get("commits_held")
    if held:
        parts.append("commits held at first: " + ", ".join(f"stage {h}" if isinstance(h, int) else h for h in held))
    if notes.get("channel_batches"):
        parts.append("channel batches: " + ", ".join(f"{k} {v}" for k, v in notes["channel_batches"].items()))
    if "server_cpu_s" in notes:
        busy = notes["server_cpu_s"] / result.seconds * 100 if result.seconds > 0 else 0
        parts.append(f"the server's CPU {notes['server_cpu_s']:.3f} s ({busy:.0f} % of the run)")
    if not parts:
        return ""
    return f"  {result.scenario}, {'on' if result.preemptive else 'off'}: " + "; ".join(parts)

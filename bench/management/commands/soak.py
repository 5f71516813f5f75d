"""python manage.py soak: a mixed load against a live platform for a while, with the memory
and open file descriptors of every process sampled, and a verdict on their growth.

Starts its own platform (web server, Celery worker, Celery beat, as platform/up does) on a
scratch SQLite database in a temporary directory, never the platform's; with ``--scaled``,
the scaled-out form: two web servers and two workers on a scratch PostgreSQL database
(created on the server ``--database-url`` or DATABASE_URL names, dropped afterwards) and a
throwaway Redis server (Celery's transport, the channel layer, the wake-up bus), the
clients spread over both web servers. See bench/soak.py for the measurements
and tests/support/workload.py for the load.
"""

from __future__ import annotations

import json
import os
import platform
import sqlite3
import sys
import time
from contextlib import ExitStack

from django.core.management.base import BaseCommand, CommandError

from tests.support.checker import history_checked
from bench.diagnosis import explained
from tests.support.live import LivePlatform, PlatformError, postgres_scratch_database
from bench.report import BenchmarkError
from tests.support.scratch import Scratch, sigterm_as_interrupt
from bench.soak import (
    FD_GROWTH_PER_H,
    RSS_GROWTH_MIB_PER_H,
    RSS_GROWTH_SHARE_PER_H,
    Series,
    memtrace_summary,
    memtrace_table,
    samples_table,
    summary_table,
)
from tests.support.workload import Load, Settings, open_transactions, queue_contents, quiet, topology_define
from baton_client import Client

#: The load: every client runs flat out except producers, which pause between rounds so
#: that consumers keep up over a long run.
LOAD = Settings(producers=2, consumers=2, lockers=3, producer_pause_s=0.05, transaction_timeout_ms=4000)
SETTLE_S = 120


class Command(BaseCommand):
    help = (
        "Run a mixed load (immediate puts; units of work that put, commit, roll back or time out; "
        "consumers that get pre-emptively under units of work and forward to another broker through a "
        "channel; peek-lock consumers completing alone or under units of work) against a live platform "
        "started for the purpose on a scratch SQLite database, for --minutes. Samples the resident memory "
        "and open file descriptors of the web server, the worker, beat and this load generator every "
        "--interval seconds; prints them, their growth per hour and a verdict, and the total-queue "
        "checker's numbers for the run (lost and duplicated must be 0). With --json, one JSON object."
    )

    def add_arguments(self, parser):
        parser.add_argument("--minutes", type=float, default=30.0, help="How long the load runs (default 30).")
        parser.add_argument("--seconds", type=float, help="How long the load runs, in seconds (instead of --minutes).")
        parser.add_argument("--interval", type=float, default=5.0, help="Seconds between samples (default 5).")
        parser.add_argument("--seed", type=int, default=0, help="Seed of the clients' choices (default 0).")
        parser.add_argument("--json", action="store_true", help="Print one JSON object instead of tables.")
        parser.add_argument("--keep", action="store_true", help="Keep the scratch directory (database, logs).")
        parser.add_argument(
            "--scaled",
            action="store_true",
            help="The scaled-out form: 2 web servers and 2 workers on PostgreSQL and Redis.",
        )
        parser.add_argument(
            "--tracemalloc",
            action="store_true",
            help=(
                "Trace the platform processes' allocations (config/memtrace.py) and report the lines whose "
                "allocations grew most; slows them down, for diagnosing growth."
            ),
        )
        parser.add_argument(
            "--heap-stats",
            action="store_true",
            help=(
                "As --tracemalloc without tracing: the platform processes' resident memory, glibc heap "
                "(in use, free) and Python's allocated blocks over the run, at no cost to the load."
            ),
        )
        parser.add_argument(
            "--database-url",
            default="",
            help="--scaled: a PostgreSQL server where a scratch database may be created (default: DATABASE_URL).",
        )

    def handle(self, *args, **options):
        duration = options["seconds"] if options["seconds"] is not None else options["minutes"] * 60
        if duration <= 0 or options["interval"] <= 0:
            raise CommandError("The duration and the interval must be positive.")
        server = options["database_url"] or os.environ.get("DATABASE_URL", "")
        if options["scaled"] and not server.startswith("postgres"):
            raise CommandError(
                "--scaled runs on PostgreSQL: give --database-url postgres://... (a server where a "
                "scratch database may be created) or set DATABASE_URL."
            )
        if options["database_url"] and not options["scaled"]:
            raise CommandError("--database-url is for --scaled (the default form runs on a scratch SQLite file).")
        options["server"] = server
        try:
            with sigterm_as_interrupt():
                report, series = self._run(duration, options)
        except KeyboardInterrupt as exc:
            raise CommandError("Interrupted.") from exc
        except (PlatformError, BenchmarkError) as exc:
            raise CommandError(str(exc)) from exc
        if options["json"]:
            self.stdout.write(json.dumps(report))
        else:
            self.stdout.write(self._text(report, series))
        for exit in report["process_exits"]:
            sys.stderr.write(
                f"--- {exit['process']} (pid {exit['pid']}) exited with status {exit['status']} after "
                f"{exit['after_s']:g} s; its log ends:\n{exit['log']}\n"
            )
        if not report["checker"]["ok"]:
            raise CommandError(f"The checker found problems: {report['checker']['problems']}")

    def _progress(self, text: str) -> None:
        sys.stderr.write(text + "\n")
        sys.stderr.flush()

    def _run(self, duration: float, options: dict) -> tuple[dict, list[Series]]:
        load_before = os.getloadavg()
        with ExitStack() as stack:
            scratch = stack.enter_context(Scratch(keep=options["keep"]))
            env = {"BATON_HOUSEKEEPING_INTERVAL_S": "1", "BATON_CHANNEL_LEASE_S": "10"}
            memtrace_dir = scratch.dir / "memtrace"
            dumping = options["tracemalloc"] or options["heap_stats"]
            if dumping:
                # about ten dumps over the run, the first (the baseline) after the warm-up
                env.update(
                    BATON_TRACEMALLOC=str(memtrace_dir),
                    BATON_TRACEMALLOC_INTERVAL_S=str(max(10, min(300, round(duration / 10)))),
                    BATON_TRACEMALLOC_FRAMES="1" if options["tracemalloc"] else "0",
                )
            database_url, form = scratch.database_url, {}
            database = f"SQLite {sqlite3.sqlite_version} (scratch file, synchronous=FULL)"
            if options["scaled"]:
                from tests.support.redisserver import redis_server

                database_url = stack.enter_context(postgres_scratch_database(options["server"], "baton_soak"))
                redis = stack.enter_context(redis_server())
                env.update(CELERY_BROKER_URL=redis.database(1), BATON_REDIS_URL=redis.database(2))
                form = {"webs": 2, "workers": 2}
                database = (
                    f"PostgreSQL {_postgres_version(database_url)} (scratch database), Redis {redis.version}, "
                    "2 web servers, 2 workers"
                )
            live = stack.enter_context(LivePlatform(scratch.dir, database_url, env=env, **form))
            self._progress(f"soak: starting a platform in {scratch.dir}")
            token = live.prepare()
            live.start()
            with Client(live.url, token, timeout=30) as client:
                queues = topology_define(client, LOAD)
            series = [Series(name, live.processes[name].pid) for name in live.names()] + [
                Series("load", os.getpid(), judged=False)
            ]
            load = Load(url=live.urls, token=token, settings=LOAD, seed=options["seed"])
            load.history.trace_open(str(scratch.dir / "trace.jsonl"))
            self._progress(f"soak: load for {duration:g} s, a sample every {options['interval']:g} s")
            started = time.monotonic()
            load.start()
            operations: list[tuple[float, int]] = []
            exits: list[dict] = []
            try:
                while True:
                    t = time.monotonic() - started
                    for s in series:
                        s.add(t)
                    operations.append((round(t, 1), load.history.operations))
                    exits = [
                        {
                            "process": p.name,
                            "pid": p.pid,
                            "after_s": round(t, 1),
                            "status": p.proc.returncode,
                            "log": live.log_tail(p.name),
                        }
                        for p in live.processes.values()
                        if not p.alive()
                    ]
                    if exits:
                        self._progress(f"soak: {', '.join(e['process'] for e in exits)} exited: the run stops here")
                    if t >= duration or exits or any(a.error for a in load.actors):
                        break
                    if len(operations) % max(1, int(60 / options["interval"])) == 0:
                        self._progress(
                            f"soak: {t:6.0f} s, {load.history.operations} operations, "
                            + ", ".join(
                                f"{s.name} {s.rss_mib[-1]:.0f} MiB/{s.fds[-1]} fds" for s in series if s.rss_mib
                            )
                        )
                    load.stop.wait(min(options["interval"], max(0.0, duration - t)))
            finally:
                try:
                    load.finish()
                finally:
                    load.history.trace_close()
            elapsed = time.monotonic() - started
            settled = False
            if not exits:
                with Client(live.url, token, timeout=30) as client:
                    deadline = time.monotonic() + SETTLE_S
                    while not quiet(client, queues) and time.monotonic() < deadline:
                        time.sleep(0.5)  # polling interval of a bounded loop
                    settled = quiet(client, queues)
                    open_units = len(open_transactions(client))
                    # the queues are judged only once nothing is in motion (an ordered browse
                    # stops at the first uncommitted put)
                    queued = queue_contents(client, queues) if settled else None
            verdict = history_checked(load.history, queued) if settled else None
            memtrace = memtrace_summary(memtrace_dir, series) if dumping else []
            diagnosis = (
                explained(
                    database_url,
                    load.history.trace_path,
                    verdict.lost + verdict.duplicated + verdict.uncommitted_visible + verdict.unknown,
                )
                if verdict and not verdict.ok
                else {}
            )
        history = load.history
        report = {
            "kind": "soak",
            "facts": {
                "command": "manage.py soak " + " ".join(sys.argv[2:]),
                "seconds": round(elapsed, 1),
                "interval_s": options["interval"],
                "database": database,
                "scaled": options["scaled"],
                "load": {
                    "producers": LOAD.producers,
                    "consumers": LOAD.consumers,
                    "peek_lock_consumers": LOAD.lockers,
                    "producer_pause_s": LOAD.producer_pause_s,
                    "transaction_timeout_ms": LOAD.transaction_timeout_ms,
                    "channel_batch_size": LOAD.channel_batch_size,
                    "seed": options["seed"],
                },
                "machine": f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs",
                "load_average_before": [round(x, 2) for x in load_before],
                "load_average_after": [round(x, 2) for x in os.getloadavg()],
                "thresholds": {
                    "rss_mib_per_h": RSS_GROWTH_MIB_PER_H,
                    "rss_share_per_h": RSS_GROWTH_SHARE_PER_H,
                    "fds_per_h": FD_GROWTH_PER_H,
                },
            },
            "operations": history.operations,
            "operations_per_s": round(history.operations / elapsed, 1) if elapsed else 0.0,
            "units_of_work": dict(history.units),
            "processes": [s.summary() for s in series],
            "growth": any(s.summary()["verdict"] == "growth" for s in series),
            "samples": [
                {
                    "process": s.name,
                    "t_s": [round(t, 1) for t in s.times_s],
                    "rss_mib": [round(r, 1) for r in s.rss_mib],
                    "fds": s.fds,
                }
                for s in series
            ],
            "operations_over_time": operations,
            **({"tracemalloc": memtrace} if options["tracemalloc"] or options["heap_stats"] else {}),
            "process_exits": exits,
            "checker": (
                {
                    **verdict.numbers(),
                    "settled": True,
                    "ok": verdict.ok,
                    "problems": verdict.problems(),
                    **({"diagnosis": diagnosis} if diagnosis else {}),
                }
                if verdict
                else {
                    "settled": False,
                    "ok": False,
                    "problems": (
                        f"{', '.join(e['process'] for e in exits)} exited during the run"
                        if exits
                        else f"not judged: {open_units} units of work still open {SETTLE_S} s after the load stopped"
                    ),
                }
            ),
        }
        return report, series

    def _text(self, report: dict, series: list[Series]) -> str:
        facts = report["facts"]
        checker = report["checker"]
        lines = [
            (
                f"soak: {facts['seconds']:g} s of mixed load, {report['operations']} operations "
                f"({report['operations_per_s']:g}/s); {facts['database']}; {facts['machine']}; "
                f"load average {facts['load_average_before'][0]} -> {facts['load_average_after'][0]}"
            ),
            "",
            samples_table(series),
            "",
            summary_table(report["processes"]),
            "",
            *([memtrace_table(report["tracemalloc"]), ""] if report.get("tracemalloc") else []),
            (
                f"verdict: {'GROWTH' if report['growth'] else 'no growth'} (growth: memory over "
                f"max({RSS_GROWTH_MIB_PER_H:g} MiB, {RSS_GROWTH_SHARE_PER_H:.0%} of the mean) per hour, or descriptors "
                f"over {FD_GROWTH_PER_H:g} per hour, after the first tenth of the run; the load generator is not "
                "judged: it keeps a record of every body for the checker)"
            ),
            "checker: " + ", ".join(f"{k} {v}" for k, v in checker.items() if k not in ("ok", "problems", "diagnosis")),
            *([f"problems: {checker['problems']}"] if checker["problems"] else []),
            *(
                ["diagnosis (the clients' steps, the database's facts):", json.dumps(checker["diagnosis"], indent=1)]
                if checker.get("diagnosis")
                else []
            ),
        ]
        return "\n".join(lines) + "\n"


def _postgres_version(database_url: str) -> str:
    import psycopg

    with psycopg.connect(database_url.replace("postgres://", "postgresql://", 1)) as conn:
        return conn.execute("SHOW server_version").fetchone()[0].split()[0]

"""python -m bench benchmark: messages per second on the put and get paths.

Runs on a scratch database of its own (a fresh SQLite file in a temporary directory, or
the database ``--database-url`` names), never on the platform's. See bench/.
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
from contextlib import ExitStack
from pathlib import Path

import django
from django.core.management.base import BaseCommand, CommandError

from baton_client.errors import BatonError
from bench.report import BATCH_MESSAGES_FACTOR, BenchmarkError, Result, json_rows, table
from tests.support.scratch import SCRATCH_FLAG, Scratch, base_dir, sigterm_as_interrupt, url_masked

#: About a minute and a half for the whole run on a 2-core machine with SQLite.
DEFAULT_MESSAGES = 800
BENCH_USER = "baton-benchmark"
PHASES = ("setup", "inprocess", "flows", "cleanup")
#: What each --only runs ("peers" also runs, with the others, under --peers).
ONLY = ("inprocess", "plain", "rest", "session", "peers")


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
        "through the REST API (a Uvicorn server started on a free loopback port; 1 and 8 clients), "
        "beside a plain baseline measured in the same run on the same disk with a sync at every commit: "
        "plain SQLite INSERT+COMMIT of 1 KiB blobs (a scratch file beside the database, WAL, "
        "synchronous=FULL, BEGIN IMMEDIATE) or, on PostgreSQL, plain INSERT+COMMIT into a scratch table "
        "(synchronous_commit=on). A second table gives Baton's in-process rates over the plain rate at "
        "the same batch size. Works on a scratch database: a fresh SQLite file in a temporary directory "
        "unless --database-url names another (which it migrates and where it defines a broker of its "
        "own, removed at the end) or --postgres starts a throwaway server. With --json, stdout is JSON "
        'lines: first one object with "kind": "facts" (command, database, durability, machine, load, '
        'elapsed), then one object with "kind": "result" per result. '
        "The session scenarios (--only session) run the units of work over sessions beside REST, and the "
        "queue scenarios: producers and consumers at once, 1+1 and 4+4, one message or 100 per call, each "
        "call acknowledged (durable) before the next, in process, over REST and over sessions. --peers adds "
        "a plain PostgreSQL table queue and RabbitMQ with publisher confirms doing the same flows, and the "
        "flows' floor: a bare Uvicorn server doing only what the flows' puts and gets must, on SQLite "
        "(bench/flow_floor.py) or, with --postgres or a PostgreSQL --database-url, with the plain queue's "
        "statements on PostgreSQL (bench/flow_floor_pg.py)."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--messages",
            type=int,
            default=DEFAULT_MESSAGES,
            metavar="N",
            help=f"Messages each one-message-per-unit-of-work scenario puts and then gets (default "
            f"{DEFAULT_MESSAGES}); the batch-of-100 scenarios move {BATCH_MESSAGES_FACTOR} times as many. "
            "Rounded up so that every client does the same number of whole units of work. The plain "
            "baselines insert as many.",
        )
        target = parser.add_mutually_exclusive_group()
        target.add_argument(
            "--database-url",
            metavar="URL",
            help="Benchmark this database (e.g. postgres://user:pw@127.0.0.1/scratch) instead of a fresh "
            "SQLite file. Use a scratch database: it is migrated. For PostgreSQL the plain baseline "
            "creates and drops a table of its own there.",
        )
        target.add_argument(
            "--postgres",
            action="store_true",
            help="Start a throwaway PostgreSQL server (Debian's binaries under /usr/lib/postgresql/*/bin, "
            "as the postgres user when root; loopback only; fsync=on, synchronous_commit=on), "
            "benchmark it against plain PostgreSQL, and stop it at the end.",
        )
        parser.add_argument(
            "--only",
            choices=ONLY,
            help="Run only these scenarios: inprocess (with its plain baseline, for the ratios), plain "
            "(the baseline alone), rest, session (units of work over REST and sessions, and the queue "
            "scenarios in process, over REST and over sessions), or peers (the plain PostgreSQL queue "
            "and RabbitMQ alone).",
        )
        parser.add_argument(
            "--peers",
            action="store_true",
            help="Also measure the peers on the queue scenarios: a plain PostgreSQL table queue (INSERT+COMMIT; "
            "DELETE ... FOR UPDATE SKIP LOCKED ... RETURNING + COMMIT) on the benchmark's PostgreSQL, or on "
            "a throwaway PostgreSQL server (fsync on) when Baton runs on SQLite; and RabbitMQ (Debian's "
            "rabbitmq-server, started in a scratch directory on loopback; pika from the bench extra) with "
            "persistent messages, publisher confirms and manual acks.",
        )
        parser.add_argument(
            "--json",
            action="store_true",
            help='Print JSON lines instead of the tables: first {"kind": "facts", ...} (command, database, '
            'durability, machine, load, elapsed), then one {"kind": "result", ...} per result with '
            "scenario, path, operation, clients, batch, messages, seconds, msgs_per_s, and for an "
            "in-process result with a plain baseline at its batch size, plain_scenario and "
            "ratio_to_plain. Progress still goes to stderr.",
        )
        parser.add_argument(
            "--keep",
            action="store_true",
            help="Keep the scratch directory (database, server log) and a --postgres server's.",
        )
        # The command re-runs itself as a child on the scratch database for these.
        parser.add_argument("--phase", choices=PHASES, help=argparse.SUPPRESS)
        parser.add_argument("--result-file", help=argparse.SUPPRESS)
        parser.add_argument("--broker", help=argparse.SUPPRESS)
        parser.add_argument("--username", help=argparse.SUPPRESS)

    # --- the child phases, on the scratch database -----------------------------------------

    def _phase(self, options) -> None:
        if os.environ.get(SCRATCH_FLAG) != "1":
            raise CommandError("--phase is internal: it runs only in the benchmark's own child processes.")
        from bench.inprocess import baton_durability, run_inprocess, scratch_cleanup, scratch_setup

        phase, broker = options["phase"], options["broker"]
        if phase == "setup":
            result = scratch_setup(broker=broker, username=options["username"])
        elif phase == "inprocess":
            results = run_inprocess(broker=broker, messages=options["messages"], progress=options["verbosity"] >= 1)
            result = {"results": [r.as_dict() for r in results], "durability": baton_durability()}
        elif phase == "flows":
            from bench.inprocess import run_inprocess_flows

            results = run_inprocess_flows(
                broker=broker, messages=options["messages"], progress=options["verbosity"] >= 1
            )
            result = {"results": [r.as_dict() for r in results], "durability": baton_durability()}
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
        command += ["--postgres"] if options["postgres"] else []
        command += ["--peers"] if options["peers"] else []
        command += ["--json"] if options["json"] else []
        broker = f"BENCH.{secrets.token_hex(4).upper()}"

        results: list[Result] = []
        facts: dict = {"server": "(not started)", "load": self._load()}
        started = time.monotonic()
        failure: str | None = None
        with sigterm_as_interrupt():
            try:
                with ExitStack() as stack:
                    throwaway = None
                    if options["postgres"]:
                        from tests.support.pgserver import postgres_server

                        self._progress(options, "benchmark: starting a throwaway PostgreSQL server")
                        throwaway = stack.enter_context(postgres_server(keep=options["keep"]))
                        database_url = throwaway.url
                        self._progress(options, f"benchmark: PostgreSQL at {throwaway.url} ({throwaway.directory})")
                    scratch = stack.enter_context(Scratch(database_url=database_url, keep=options["keep"]))
                    self._run(scratch, options, broker=broker, throwaway=throwaway, facts=facts, results=results)
            except KeyboardInterrupt:
                failure = "Interrupted (the servers, if started, are stopped)."
            except BenchmarkError as exc:
                failure = str(exc)

        elapsed = time.monotonic() - started
        if options["json"]:
            self.stdout.write(self._json(results, command=command, facts=facts, elapsed=elapsed, failure=failure))
        else:
            self.stdout.write(self._report(results, command=command, facts=facts, elapsed=elapsed))
        if failure:
            raise CommandError(failure)

    def _run(self, scratch: Scratch, options, *, broker: str, throwaway, facts: dict, results: list[Result]) -> None:
        """The scenarios, in order: the plain baseline, in-process, REST."""
        from bench.plain import database_kind

        only, messages = options["only"], options["messages"]
        self._progress(options, f"benchmark: scratch directory {scratch.dir}")
        kind = database_kind(scratch.database_url)
        facts["database"] = self._database_facts(scratch, throwaway=throwaway)
        facts["database_kind"] = kind or "other"
        if throwaway is not None:
            facts["filesystem"] = filesystem(throwaway.directory)
        if kind == "postgres":
            from bench.plain import postgres_server_settings

            try:
                facts["postgres"] = postgres_server_settings(scratch.database_url)
            except Exception as exc:  # psycopg's errors: the database cannot be reached
                raise BenchmarkError(f"Cannot connect to {url_masked(scratch.database_url)}: {exc}") from exc
        baton = only in (None, "inprocess", "rest", "session")
        try:
            if baton:
                self._progress(options, "benchmark: migrating the scratch database and defining queues")
                token = scratch.phase("setup", broker=broker, username=BENCH_USER, verbosity=options["verbosity"])[
                    "token"
                ]
            if only in (None, "inprocess", "plain"):
                results += self._plain(scratch, options, kind=kind, facts=facts)
            if only in (None, "inprocess"):
                out = scratch.phase("inprocess", broker=broker, messages=messages, verbosity=options["verbosity"])
                results += [Result(**r) for r in out["results"]]
                facts["baton_durability"] = out.get("durability", {})
            if only in (None, "session"):
                out = scratch.phase("flows", broker=broker, messages=messages, verbosity=options["verbosity"])
                results += [Result(**r) for r in out["results"]]
                facts["baton_durability"] = out.get("durability", {})
            if only in (None, "rest", "session"):
                results += self._rest(
                    scratch, options, token=token, broker=broker, facts=facts, session=only in (None, "session")
                )
            if only == "peers" or options["peers"]:
                results += self._peers(
                    options, kind=kind, database_url=scratch.database_url, facts=facts, directory=scratch.dir
                )
        finally:
            if baton and not scratch.own_database and throwaway is None:
                try:
                    scratch.phase("cleanup", broker=broker, verbosity=0)
                except BenchmarkError as exc:
                    self.stderr.write(f"benchmark: could not remove broker {broker}: {exc}")
        if options["keep"]:
            self._progress(options, f"benchmark: kept {scratch.dir}")

    def _plain(self, scratch: Scratch, options, *, kind: str | None, facts: dict) -> list[Result]:
        """The plain baseline on the scratch database's disk (SQLite: a file beside it) or
        server (PostgreSQL: a table of its own)."""
        from bench.plain import run_plain_postgres, run_plain_sqlite, sqlite_path

        progress, messages = options["verbosity"] >= 1, options["messages"]
        if kind == "sqlite":
            directory = sqlite_path(scratch.database_url, base=base_dir()).parent
            self._progress(options, f"benchmark: plain SQLite baseline in {directory}")
            results, facts["plain_durability"] = run_plain_sqlite(
                directory=directory, messages=messages, progress=progress
            )
            facts["filesystem"] = filesystem(directory)
            return results
        if kind == "postgres":
            self._progress(options, "benchmark: plain PostgreSQL baseline")
            try:
                results, facts["plain_durability"] = run_plain_postgres(
                    database_url=scratch.database_url, messages=messages, progress=progress
                )
            except BenchmarkError:
                raise
            except Exception as exc:  # psycopg's errors
                raise BenchmarkError(f"plain PostgreSQL baseline: {exc}") from exc
            return results
        self.stderr.write("benchmark: no plain baseline for this database (SQLite and PostgreSQL only).")
        return []

    def _rest(
        self, scratch: Scratch, options, *, token: str, broker: str, facts: dict, session: bool = False
    ) -> list[Result]:
        """Over HTTP: the units of work over REST, and with ``session`` the units of work over
        sessions and the queue scenarios over REST and sessions."""
        from bench.flows import client_flows
        from bench.rest import run_rest, server_ready

        progress, messages = options["verbosity"] >= 1, options["messages"]
        with scratch.server() as (base_url, command, proc):
            facts["server"] = shlex.join(["python"] + command[1:])
            self._progress(options, f"benchmark: server {base_url} (log: {scratch.dir / 'server.log'})")
            try:
                server_ready(base_url, token, broker, alive=lambda: proc.poll() is None)
                results = []
                for transport in ("rest",) + (("session",) if session else ()):
                    results += run_rest(
                        base_url=base_url,
                        token=token,
                        broker=broker,
                        messages=messages,
                        progress=progress,
                        transport=transport,
                    )
                if session:
                    for transport in ("rest", "session"):
                        results += client_flows(
                            base_url=base_url,
                            token=token,
                            broker=broker,
                            transport=transport,
                            messages=messages,
                            progress=progress,
                        )
                return results
            except (BenchmarkError, BatonError) as exc:  # BatonError: what the Python client raised
                raise BenchmarkError(f"{exc!r}\nserver log:\n{scratch.log_tail('server.log')}") from exc

    def _peers(self, options, *, kind: str | None, database_url: str, facts: dict, directory: Path) -> list[Result]:
        """The flow's floor (a bare server doing only what the flow's calls must: on SQLite
        ``bench.flow_floor``, its file in ``directory``; on PostgreSQL ``bench.flow_floor_pg``,
        on the benchmark's database); the plain PostgreSQL queue (on the
        benchmark's PostgreSQL, or on a throwaway server started for it) and RabbitMQ, on the
        queue scenarios."""
        from bench.flows import run_plain_postgres_queue
        from bench.plain import postgres_server_settings
        from bench.rabbitmq import rabbitmq_available, rabbitmq_server, run_rabbitmq

        progress, messages = options["verbosity"] >= 1, options["messages"]
        results: list[Result] = []
        if kind != "postgres":
            from bench.flow_floor import FACTS, run_flow_floor

            self._progress(options, "benchmark: the flow's floor (a bare Uvicorn server on SQLite)")
            facts["flow_floor"] = FACTS
            try:
                results += run_flow_floor(directory=directory, messages=messages, progress=progress)
            except RuntimeError as exc:
                raise BenchmarkError(f"the flow's floor: {exc}") from exc
        else:
            from bench.flow_floor_pg import CONTRACT_FACTS, ENGINE_FACTS, FACTS, run_flow_floor_pg

            self._progress(options, "benchmark: the flow's floor (a bare Uvicorn server on PostgreSQL)")
            facts["flow_floor"] = FACTS
            facts["flow_floor_engine"] = ENGINE_FACTS
            facts["flow_floor_contract"] = CONTRACT_FACTS
            try:
                for writes in ("queue", "engine", "contract"):
                    results += run_flow_floor_pg(
                        database_url=database_url,
                        directory=directory,
                        messages=messages,
                        progress=progress,
                        writes=writes,
                    )
            except RuntimeError as exc:
                raise BenchmarkError(f"the flow's floor: {exc}") from exc
        with ExitStack() as stack:
            if kind != "postgres":
                from tests.support.pgserver import postgres_server

                self._progress(options, "benchmark: starting a throwaway PostgreSQL server for the PostgreSQL queue")
                server = stack.enter_context(postgres_server(keep=options["keep"]))
                database_url = server.url
                facts["peer_postgres"] = server.describe()
            try:
                facts["peer_postgres_settings"] = postgres_server_settings(database_url)
                results += run_plain_postgres_queue(database_url=database_url, messages=messages, progress=progress)
            except BenchmarkError:
                raise
            except Exception as exc:  # psycopg's errors
                raise BenchmarkError(f"plain PostgreSQL queue: {exc}") from exc
        missing = rabbitmq_available()
        if missing:
            self.stderr.write(f"benchmark: no RabbitMQ peer: {missing}.")
            facts["rabbitmq"] = f"not measured: {missing}"
            return results
        from bench.flows import FLOW_CLIENTS, flow_messages

        self._progress(options, "benchmark: starting RabbitMQ")
        with rabbitmq_server(keep=options["keep"]) as (node, describe):
            url = node.amqp_url
            facts["rabbitmq"] = describe
            # per message only: pika's blocking channel waits for each publish's confirm
            flows = [(c, 1, flow_messages(messages, batch=1, clients=c)) for c in FLOW_CLIENTS]
            results += run_rabbitmq(url=url, flows=flows, progress=progress)
        return results

    @staticmethod
    def _database_facts(scratch: Scratch, *, throwaway=None) -> str:
        if scratch.own_database:
            return f"SQLite {sqlite3.sqlite_version} (WAL, IMMEDIATE), a fresh file in a temporary directory"
        if throwaway is not None:
            return throwaway.describe()
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
    def _durability(facts: dict) -> list[str]:
        """What syncs each side's commits, and a warning for every figure that means less
        than it seems."""
        lines, warnings = [], []
        baton, plain, pg = facts.get("baton_durability"), facts.get("plain_durability"), facts.get("postgres")
        if pg:
            lines.append(
                f"PostgreSQL {pg.get('server_version', '?')}: fsync={pg.get('fsync')}, "
                f"synchronous_commit={pg.get('synchronous_commit')} (the server's, as a new session "
                f"sees them), wal_sync_method={pg.get('wal_sync_method')}"
            )
            if pg.get("fsync") != "on":
                warnings.append("the server runs with fsync off: nothing reaches the disk, every figure is meaningless")
        if baton:
            if baton.get("vendor") == "sqlite":
                lines.append(
                    f"Baton:  journal_mode={baton.get('journal_mode')}, "
                    f"synchronous={baton.get('synchronous')} (its database connection)"
                )
                if plain and baton.get("synchronous") not in ("FULL", "EXTRA"):
                    warnings.append(
                        f"Baton's SQLite runs with synchronous={baton.get('synchronous')}: its "
                        "commits are not synced like the plain baseline's (FULL), so Baton / "
                        "plain compares unequal durability"
                    )
            elif baton.get("vendor") == "postgresql":
                lines.append(f"Baton:  synchronous_commit={baton.get('synchronous_commit')} (its database connection)")
                if baton.get("synchronous_commit") != "on":
                    warnings.append(
                        f"Baton's connection runs with synchronous_commit="
                        f"{baton.get('synchronous_commit')}: Baton / plain compares unequal durability"
                    )
        if plain:
            if "synchronous" in plain:
                lines.append(
                    f"plain:  journal_mode={plain['journal_mode']}, synchronous={plain['synchronous']}, "
                    "BEGIN IMMEDIATE ... COMMIT, a scratch file beside the database, measured after "
                    f"{plain.get('wal_warmup_units', 0)} single-row commits (its WAL at its working size)"
                )
            else:
                session = plain.get("session", {})
                lines.append(
                    f"plain:  SET synchronous_commit=on (session: synchronous_commit="
                    f"{session.get('synchronous_commit')}), a scratch table dropped at the end"
                )
        if facts.get("filesystem"):
            lines.append(f"disk:   {facts['filesystem']}")
            if facts["filesystem"].split()[0] in ("tmpfs", "ramfs"):
                warnings.append("the scratch directory is in memory: a sync costs nothing there")
        facts["warnings"] = warnings
        return lines + [f"WARNING: {w}" for w in warnings]

    @staticmethod
    def _machine() -> str:
        return (
            f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs, "
            f"Python {platform.python_version()}, Django {django.get_version()}"
        )

    @staticmethod
    def _json(results: list[Result], *, command: list[str], facts: dict, elapsed: float, failure: str | None) -> str:
        """JSON lines: the facts, then one object per result."""
        Command._durability(facts)  # fills facts["warnings"]
        head = {
            "kind": "facts",
            "command": shlex.join(command),
            "database": facts.get("database", ""),
            "database_kind": facts.get("database_kind"),
            "server": facts["server"],
            "machine": Command._machine(),
            "load_start": facts["load"],
            "load_end": Command._load(),
            "elapsed_s": round(elapsed, 3),
            "baton_durability": facts.get("baton_durability"),
            "plain_durability": facts.get("plain_durability"),
            "postgres": facts.get("postgres"),
            "filesystem": facts.get("filesystem"),
            "peer_postgres": facts.get("peer_postgres"),
            "peer_postgres_settings": facts.get("peer_postgres_settings"),
            "rabbitmq": facts.get("rabbitmq"),
            "flow_floor": facts.get("flow_floor"),
            "warnings": facts["warnings"],
            "error": failure,
        }
        return "\n".join(json.dumps(row) for row in [head] + json_rows(results))

    @staticmethod
    def _report(results: list[Result], *, command: list[str], facts: dict, elapsed: float) -> str:
        durability = Command._durability(facts)
        lines = [
            "Baton benchmark: 1 KiB persistent messages; a unit of work is put (or get) + commit, begun by "
            "its put or get, or begin + put (or get) + commit",
            f"command:   {shlex.join(command)}",
            f"database:  {facts.get('database', '')}",
            f"server:    {facts['server']}",
            f"machine:   {Command._machine()}",
            f"load avg:  {facts['load']} at the start, {Command._load()} at the end (1 min; other work on "
            "the machine lowers every figure)",
            f"elapsed:   {elapsed:.1f} s",
        ]
        if durability:
            lines += ["durability:"] + [f"  {line}" for line in durability]
        if facts.get("peer_postgres") or facts.get("peer_postgres_settings"):
            pg = facts.get("peer_postgres_settings") or {}
            lines.append(
                f"PostgreSQL queue: {facts.get('peer_postgres') or 'the benchmark database'}; server fsync="
                f"{pg.get('fsync')}, the queue's sessions SET synchronous_commit=on"
            )
        if facts.get("rabbitmq"):
            lines.append(f"RabbitMQ:  {facts['rabbitmq']}")
        if facts.get("flow_floor"):
            lines.append(f"floor:     {facts['flow_floor']}")
        lines += [
            "",
            table(results) if results else "(no scenario completed)",
            "",
            "batch: messages per unit of work (per call for put+get); REST: 3 requests per unit of work (begin, "
            "put or get, commit), clients are threads each with its own keep-alive connection; session: the "
            "same over one session per client (the put pipelined before the commit); put+get: the queue "
            "scenarios, clients/2 producers and clients/2 consumers at once, immediate durable puts and final "
            "gets, each call acknowledged before the next; plain: one connection in this process, INSERT of "
            "1 KiB blobs, a sync at every commit; the PostgreSQL queue and RabbitMQ: the queue scenarios' flow; "
            "the session floor: the same flow through a bare server doing only its puts' and gets' writes.",
        ]
        return "\n".join(lines)


def filesystem(path: Path) -> str:
    """The filesystem type and mount point holding ``path`` (from /proc/mounts), e.g.
    "ext4 on /": a sync on tmpfs costs nothing."""
    try:
        mounts = [line.split()[:3] for line in Path("/proc/mounts").read_text().splitlines()]
    except OSError:
        return ""
    resolved = str(Path(path).resolve())
    best = ("", "")
    for _device, mount, fstype in (m for m in mounts if len(m) == 3):
        mount = mount.replace("\\040", " ")
        if (resolved == mount or resolved.startswith(mount.rstrip("/") + "/")) and len(mount) >= len(best[0]):
            best = (mount, fstype)
    return f"{best[1]} on {best[0]}" if best[0] else ""

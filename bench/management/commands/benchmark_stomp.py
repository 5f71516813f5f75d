"""``manage.py benchmark_stomp``: stomp.py against Baton's STOMP server and RabbitMQ's STOMP
plugin, side by side (bench/stomp_race.py says what is measured)."""

from __future__ import annotations

import argparse
import json
import os
from contextlib import ExitStack
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from bench.rabbitmq import rabbitmq_available
from bench.report import BenchmarkError
from tests.support.scratch import SCRATCH_FLAG, Scratch, sigterm_as_interrupt
from bench.stomp_race import (
    BROKER,
    QUEUE,
    SCENARIOS,
    USER,
    StompResult,
    baton_stomp,
    medians,
    rabbitmq_stomp,
    stomp_race,
    table,
)


class Command(BaseCommand):
    help = (
        "The same stomp.py producer and consumer (persistent 1 KiB messages, one per SEND with a receipt and "
        "100 per transaction) against Baton's STOMP server and RabbitMQ's STOMP plugin, side by side."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--messages", type=int, default=2000, help="messages per scenario (default 2000)")
        parser.add_argument("--database-url", help="Baton's database (a scratch one); default: a fresh SQLite file")
        parser.add_argument(
            "--rounds",
            type=int,
            default=3,
            help="rounds of every scenario, Baton and RabbitMQ taking turns; each row is the median (default 3)",
        )
        parser.add_argument("--no-rabbitmq", action="store_true", help="Baton only")
        parser.add_argument("--json", action="store_true", help="print the facts and figures as JSON")
        parser.add_argument("--keep", action="store_true", help="keep the scratch directories")
        # The command re-runs itself as a child on the scratch database for the engine alone.
        parser.add_argument("--phase", choices=("engine",), help=argparse.SUPPRESS)
        parser.add_argument("--result-file", help=argparse.SUPPRESS)

    def _engine_phase(self, options) -> None:
        if os.environ.get(SCRATCH_FLAG) != "1":
            raise CommandError("--phase is internal: it runs only in the benchmark's own child processes.")
        from bench.stomp_engine import engine_race

        rows = engine_race(
            username=USER,
            broker=BROKER,
            queue=QUEUE,
            messages=options["messages"],
            scenarios=SCENARIOS,
            rounds=options["rounds"],
        )
        Path(options["result_file"]).write_text(json.dumps(rows))

    def handle(self, *args, **options) -> None:
        if options["phase"]:
            return self._engine_phase(options)
        progress = options["verbosity"] >= 1 and not options["json"]
        facts: dict = {
            "load": "persistent 1 KiB messages; a stomp.py producer and consumer, concurrently; "
            "send+receipt: a receipt per SEND and per ACK; transaction/100: 100 SENDs or ACKs "
            "per transaction, a receipt per COMMIT"
        }
        rounds = options["rounds"]
        if rounds < 1:
            raise CommandError("--rounds must be 1 or more.")
        facts["rounds"] = (
            f"{rounds}: Baton and RabbitMQ take turns at each scenario in each round, then the engine runs "
            "its rounds alone; each row is the round of median rate"
        )
        missing = rabbitmq_available() if not options["no_rabbitmq"] else "--no-rabbitmq"
        results = []
        try:
            with sigterm_as_interrupt(), Scratch(database_url=options["database_url"], keep=options["keep"]) as scratch:
                with ExitStack() as servers:
                    targets = [servers.enter_context(baton_stomp(scratch))]
                    facts["baton"] = targets[0].describe
                    if missing:
                        facts["rabbitmq"] = f"not measured: {missing}"
                    else:
                        targets.append(servers.enter_context(rabbitmq_stomp(keep=options["keep"])))
                        facts["rabbitmq"] = targets[1].describe
                    results += stomp_race(targets, messages=options["messages"], rounds=rounds, progress=progress)
                if progress:  # the servers have stopped: the engine runs alone
                    self.stderr.write("  Baton's engine alone, in process")
                rows = scratch.phase("engine", command="benchmark_stomp", messages=options["messages"], rounds=rounds)
                results += [StompResult("engine", **row, rounds=[row["messages"] / row["seconds"]]) for row in rows]
                facts["engine"] = (
                    "the same load through the operations the STOMP server calls, in one process with "
                    "no protocol (bench/stomp_engine.py): what a STOMP figure can reach at best"
                )
        except BenchmarkError as exc:
            raise CommandError(str(exc)) from exc
        order = {peer: n for n, peer in enumerate(("Baton", "engine", "RabbitMQ"))}
        scenarios = {name: n for n, (name, _) in enumerate(SCENARIOS)}
        results = sorted(medians(results), key=lambda r: (order.get(r.peer, 9), scenarios.get(r.scenario, 9)))
        if options["json"]:
            self.stdout.write(json.dumps({**facts, "results": [r.as_dict() for r in results]}, indent=2))
            return
        self.stdout.write(table(results))
        for key in ("load", "rounds", "baton", "engine", "rabbitmq"):
            if key in facts:
                self.stdout.write(f"{key}: {facts[key]}")

"""``manage.py benchmark_stomp``: stomp.py against Baton's STOMP server and RabbitMQ's STOMP
plugin, side by side (bench/stomp_race.py says what is measured)."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from bench.rabbitmq import rabbitmq_available
from bench.report import BenchmarkError
from bench.scratch import Scratch, sigterm_as_interrupt
from bench.stomp_race import baton_stomp, rabbitmq_stomp, stomp_race, table


class Command(BaseCommand):
    help = (
        "The same stomp.py producer and consumer (persistent 1 KiB messages, one per SEND with a receipt and "
        "100 per transaction) against Baton's STOMP server and RabbitMQ's STOMP plugin, side by side."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--messages", type=int, default=2000, help="messages per scenario (default 2000)")
        parser.add_argument("--database-url", help="Baton's database (a scratch one); default: a fresh SQLite file")
        parser.add_argument("--no-rabbitmq", action="store_true", help="Baton only")
        parser.add_argument("--json", action="store_true", help="print the facts and figures as JSON")
        parser.add_argument("--keep", action="store_true", help="keep the scratch directories")

    def handle(self, *args, **options) -> None:
        progress = options["verbosity"] >= 1 and not options["json"]
        facts: dict = {
            "load": "persistent 1 KiB messages; a stomp.py producer and consumer, concurrently; "
            "send+receipt: a receipt per SEND and per ACK; transaction/100: 100 SENDs or ACKs "
            "per transaction, a receipt per COMMIT"
        }
        results = []
        try:
            with sigterm_as_interrupt(), Scratch(database_url=options["database_url"], keep=options["keep"]) as scratch:
                with baton_stomp(scratch) as target:
                    facts["baton"] = target.describe
                    results += stomp_race(target, messages=options["messages"], progress=progress)
                missing = rabbitmq_available() if not options["no_rabbitmq"] else "--no-rabbitmq"
                if missing:
                    facts["rabbitmq"] = f"not measured: {missing}"
                else:
                    with rabbitmq_stomp(keep=options["keep"]) as target:
                        facts["rabbitmq"] = target.describe
                        results += stomp_race(target, messages=options["messages"], progress=progress)
        except BenchmarkError as exc:
            raise CommandError(str(exc)) from exc
        if options["json"]:
            self.stdout.write(json.dumps({**facts, "results": [r.as_dict() for r in results]}, indent=2))
            return
        self.stdout.write(table(results))
        for key in ("load", "baton", "rabbitmq"):
            if key in facts:
                self.stdout.write(f"{key}: {facts[key]}")

"""python -m bench benchmark_ingest: records per second of a Spark ingest into a running platform."""

from __future__ import annotations

import json
import os
import time

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from brokers.models import Broker, Queue
from brokers.services.brokers import broker_define
from brokers.services.queues import queue_define
from ingest.models import IngestState
from ingest.services import ingest_run, ingest_start
from spark_jobs.ingest import BATCH_SIZE
from spark_jobs.puts import IN_FLIGHT


class Command(BaseCommand):
    help = (
        "Measure a Spark ingest of N records of SIZE bytes (JSON Lines, one message each, keyed by file hash "
        "and record number) into a queue of the platform answering at BATON_API_URL (its tasks put over "
        "sessions), run from this process. "
        "The file is written under the staging directory once and reused. Prints records per second."
    )

    def add_arguments(self, parser):
        parser.add_argument("--records", type=int, default=1_000_000)
        parser.add_argument("--size", type=int, default=1024, help="Bytes per record (its whole line, newline aside).")
        parser.add_argument("--broker", default="BENCH.INGEST")
        parser.add_argument("--user", default="admin")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, records, size, broker, user, **options):
        owner = get_user_model().objects.filter(username=user).first()
        if owner is None:
            raise CommandError(f"No user {user!r}.")
        name = f"bench/records-{records}-{size}.jsonl"
        path = settings.BATON_STAGING_DIR / name
        if not path.exists():
            _written(path, records=records, size=size)
        if not Broker.objects.filter(name=broker).exists():
            broker_define(name=broker)
        queue = f"Q{int(time.time())}"
        if not Queue.objects.filter(broker__name=broker, name=queue).exists():
            queue_define(broker=broker, name=queue, max_depth=records + 1)
        with transaction.atomic():
            ingest = ingest_start(user=owner, broker=broker, queue=queue, source=name, on_worker=False)
        started = time.perf_counter()
        ingest = ingest_run(ingest_id=ingest.pk)
        elapsed = time.perf_counter() - started
        if ingest.state != IngestState.SUCCEEDED:
            raise CommandError(f"Ingest {ingest.pk} failed: {ingest.error}")
        facts = {
            "records": records,
            "size": size,
            "seconds": round(elapsed, 1),
            "records_per_s": round(records / elapsed, 1),
            "messages_put": ingest.messages_put,
            "load_average": os.getloadavg(),
            "cpus": os.cpu_count(),
            "write_partitions": settings.BATON_INGEST_WRITE_PARTITIONS,
            "batch_size": BATCH_SIZE,
            "in_flight": IN_FLIGHT,
            "transport": "session",
            "master": settings.BATON_SPARK_MASTER or "local[*,3]",
            "database": settings.DATABASES["default"]["ENGINE"],
        }
        if options["json"]:
            self.stdout.write(json.dumps(facts))
        else:
            self.stdout.write(
                f"{records} records of {size} B in {elapsed:.1f} s: {records / elapsed:.0f} records/s "
                f"({ingest.messages_put} put; load average {facts['load_average']})"
            )


def _written(path, *, records: int, size: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    with open(temporary, "w", encoding="utf-8") as out:
        for n in range(records):
            head = f'{{"n":{n},"pad":"'
            out.write(head + "x" * max(0, size - len(head) - 2) + '"}\n')
    os.replace(temporary, path)

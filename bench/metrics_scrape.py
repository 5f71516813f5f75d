"""What a ``/metrics`` scrape costs with many queues (docs/monitoring.md: at most 50 ms
of server CPU with 1,000 queues).

    python -m bench.metrics_scrape [--queues 1000] [--messages 3] [--scrapes 20] [--rounds 5]
                                   [--postgres postgres://user@host:port/any]

Sets up a scratch database (SQLite in a temporary directory; with ``--postgres``, a fresh
database on that server, dropped afterwards), migrates it, defines one broker with
``--queues`` queues, puts ``--messages`` messages on each through the REST API (so the
journal has their events), opens a unit of work, then scrapes ``/metrics`` in this process
through Django's handler as a superuser with Prometheus's Accept header, in ``--rounds``
rounds, and prints for each round the median and the worst of the CPU time
(``time.process_time``: this process's, the server's share; on PostgreSQL the database
server's own work is not in it) and of the wall time, then the median of the rounds'
medians and the worst scrape of all. Before it scrapes, the process's garbage collector is
set as a web process sets it (``config/asgi.py``: ``collector_tuned``), so a scrape pays
for the collections a web process's would.
"""

from __future__ import annotations

import argparse
import os
import secrets
import statistics
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parents[1]
#: The Accept header Prometheus 2 scrapes with (OpenMetrics preferred).
PROMETHEUS_ACCEPT = (
    "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
    "text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
)


@contextmanager
def _scratch_postgres(server_url: str):
    import psycopg

    parts = urlsplit(server_url)
    name = f"baton_metrics_{secrets.token_hex(4)}"
    admin = {"host": parts.hostname, "port": parts.port or 5432, "user": parts.username, "password": parts.password}
    with psycopg.connect(dbname="postgres", autocommit=True, **admin) as c:
        c.execute(f'CREATE DATABASE "{name}"')
    try:
        yield urlunsplit(parts._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(dbname="postgres", autocommit=True, **admin) as c:
            c.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _run(args, directory: Path, database_url: str) -> None:
    os.environ.update({"BATON_VAR_DIR": str(directory), "DATABASE_URL": database_url})
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command
    from django.test import Client

    from brokers.services.access import api_token_issue
    from brokers.services.brokers import broker_define
    from brokers.services.queues import queue_define

    call_command("migrate", verbosity=0)
    token = api_token_issue(username="bench", create_user=True, superuser=True)
    client = Client(HTTP_AUTHORIZATION=f"Token {token}")
    broker_define(name="QM1")
    started = time.monotonic()
    for n in range(args.queues):
        queue_define(broker="QM1", name=f"Q{n:04d}")
        for i in range(args.messages):
            response = client.post(
                f"/api/brokers/QM1/queues/Q{n:04d}/messages/", {"body": f"m{i}"}, content_type="application/json"
            )
            assert response.status_code == 201, response.content
    client.post("/api/brokers/QM1/transactions/", {}, content_type="application/json")
    print(
        f"{args.queues} queues, {args.queues * args.messages} messages put in {time.monotonic() - started:.1f} s "
        f"({'PostgreSQL' if database_url.startswith('postgres') else 'SQLite'})"
    )
    from django.conf import settings

    from config.collector import collector_tuned

    collector_tuned(settings.BATON_GC_THRESHOLD)  # as config/asgi.py, once the process has loaded
    accept = {"HTTP_ACCEPT": PROMETHEUS_ACCEPT}  # what Prometheus sends
    for _ in range(2):  # the first scrapes warm the process up
        client.get("/metrics", **accept)
    medians, worst = [], 0.0
    for n in range(args.rounds):
        cpu, wall, size = [], [], 0
        for _ in range(args.scrapes):
            c0, w0 = time.process_time(), time.perf_counter()
            response = client.get("/metrics", **accept)
            cpu.append((time.process_time() - c0) * 1000)
            wall.append((time.perf_counter() - w0) * 1000)
            assert response.status_code == 200, response.content[:300]
            size = len(response.content)
        medians.append(statistics.median(cpu))
        worst = max(worst, max(cpu))
        print(
            f"round {n + 1}: scrape of {size:,} bytes, {args.scrapes} scrapes: "
            f"CPU median {statistics.median(cpu):.1f} ms, worst {max(cpu):.1f} ms; "
            f"wall median {statistics.median(wall):.1f} ms, worst {max(wall):.1f} ms"
        )
    print(
        f"{args.rounds} rounds: CPU median of medians {statistics.median(medians):.1f} ms, worst scrape {worst:.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queues", type=int, default=1000)
    parser.add_argument("--messages", type=int, default=3, help="messages put on each queue")
    parser.add_argument("--scrapes", type=int, default=20, help="scrapes per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--postgres", help="a PostgreSQL server URL: the scratch database is made on it")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="baton-metrics-") as directory:
        if args.postgres:
            with _scratch_postgres(args.postgres) as url:
                _run(args, Path(directory), url)
        else:
            _run(args, Path(directory), f"sqlite:///{directory}/baton.sqlite3")


if __name__ == "__main__":
    main()

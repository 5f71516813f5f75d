"""The in-process scenarios and the scratch database's setup. These run inside a child
process whose settings point at the scratch database (see :mod:`.scratch`)."""

from __future__ import annotations

import sys
import time

from django.core.management import call_command

from transactions.manager import transaction_begin, transaction_commit
from transactions.models import JournalEvent, Transaction

from brokers.models import Persistence
from brokers.selectors import broker_get
from brokers.services.access import api_token_issue
from brokers.services.brokers import broker_define, broker_delete
from brokers.services.message_input import MessageInput
from brokers.services.messages import message_get, message_put
from brokers.services.queues import queue_define
from .flows import FLOW_BATCHES, FLOW_CLIENTS, GET_WAIT_S, flows
from .report import (
    BATCHES,
    REST_CLIENTS,
    WARMUP_QUEUE,
    BenchmarkError,
    Result,
    body_text,
    queue_name,
    scenario_messages,
)

#: Benchmark queues hold everything one scenario puts before its gets drain them.
MAX_DEPTH = 999_999_999


def scratch_setup(*, broker: str, username: str) -> dict:
    """Migrate the scratch database, define the benchmark broker and its queues, and issue
    the API token the HTTP clients use."""
    call_command("migrate", interactive=False, verbosity=0)
    broker_define(name=broker, description="python manage.py benchmark")
    names = [WARMUP_QUEUE] + [queue_name("in", 1, b) for b in BATCHES]
    names += [queue_name(path, c, b) for path in ("rest", "session") for c in REST_CLIENTS for b in BATCHES]
    names += [
        queue_name(f"flow_{path}", c, b)
        for path in ("in", "rest", "session")
        for c in FLOW_CLIENTS
        for b in FLOW_BATCHES
    ]
    for name in names:
        queue_define(broker=broker, name=name, max_depth=MAX_DEPTH, default_persistence=Persistence.PERSISTENT)
    return {"token": api_token_issue(username=username, create_user=True, superuser=True)}


def baton_durability() -> dict:
    """What durability Baton's database connection runs with (after the warm-up, so that its
    PRAGMAs or SETs have been made): SQLite's journal mode and synchronous level, or
    PostgreSQL's synchronous_commit and fsync. Printed beside the plain baseline's, which
    always runs with a sync at every commit."""
    from django.db import connection

    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("PRAGMA journal_mode")
            mode = str(cursor.fetchone()[0]).upper()
            cursor.execute("PRAGMA synchronous")
            level = cursor.fetchone()[0]
            return {
                "vendor": "sqlite",
                "journal_mode": mode,
                "synchronous": {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}.get(level, str(level)),
            }
        if connection.vendor == "postgresql":
            facts = {"vendor": "postgresql"}
            for name in ("synchronous_commit", "fsync"):
                cursor.execute(f"SHOW {name}")
                facts[name] = cursor.fetchone()[0]
            return facts
    return {"vendor": connection.vendor}


def scratch_cleanup(*, broker: str) -> None:
    """Remove what a run left on a database that is not a throw-away file: the broker (with
    its queues and any messages), its units of work and their journal."""
    broker_delete(name=broker, purge=True)
    Transaction.objects.filter(broker=broker).delete()  # their links go with them
    JournalEvent.objects.filter(broker=broker).delete()


def _unit_put(*, broker: str, queue: str, inputs: list[MessageInput], timeout_ms: int, begun: bool) -> None:
    """A unit of work that puts and commits. ``begun``: begun by its own call first (three
    calls, as the REST API's begin, put, commit); else begun by the put itself (syncpoint
    yes, as an MQPUT under syncpoint does: two calls)."""
    if begun:
        txn = transaction_begin(broker=broker, timeout_ms=timeout_ms)
        message_put(broker=broker, queue=queue, messages=inputs, transaction_id=txn.id)
        transaction_commit(transaction_id=txn.id)
        return
    put = message_put(broker=broker, queue=queue, messages=inputs, syncpoint="yes")
    transaction_commit(transaction_id=put.transaction_id)


def _unit_get(*, broker: str, queue: str, batch: int, timeout_ms: int, begun: bool) -> int:
    if begun:
        txn = transaction_begin(broker=broker, timeout_ms=timeout_ms)
        got = message_get(broker=broker, queue=queue, transaction_id=txn.id, batch=batch)
        transaction_commit(transaction_id=txn.id)
        return len(got.messages)
    got = message_get(broker=broker, queue=queue, syncpoint="yes", batch=batch)
    if got.transaction_id:
        transaction_commit(transaction_id=got.transaction_id)
    return len(got.messages)


#: The two forms of a unit of work: begun by the put or get (two calls), or by a begin of
#: its own first (three calls).
FORMS = (("put+commit", "get+commit", False), ("begin+put+commit", "begin+get+commit", True))


def run_inprocess(*, broker: str, messages: int, progress: bool = False) -> list[Result]:
    """Per batch size and form of unit of work: put+commit, then get+commit, the scenario's
    messages (see :func:`.report.scenario_messages`), one unit of work after another,
    calling the services directly (as a worker or a channel agent would)."""
    timeout_ms = broker_get(name=broker).transaction_timeout_ms
    body = body_text().encode("ascii")

    def inputs(n: int) -> list[MessageInput]:
        return [MessageInput(body=body, persistence=Persistence.PERSISTENT) for _ in range(n)]

    # Warm up: imports, prepared statements, the first connection and its PRAGMAs.
    for begun in (False, True):
        for _ in range(3):
            _unit_put(broker=broker, queue=WARMUP_QUEUE, inputs=inputs(2), timeout_ms=timeout_ms, begun=begun)
            _unit_get(broker=broker, queue=WARMUP_QUEUE, batch=2, timeout_ms=timeout_ms, begun=begun)

    results = []
    for batch in BATCHES:
        queue = queue_name("in", 1, batch)
        total = scenario_messages(messages, batch=batch)
        units = total // batch
        batch_inputs = inputs(batch)
        for put_label, get_label, begun in FORMS:
            if progress:
                print(f"  in-process {put_label}, batch {batch}: {total} messages", file=sys.stderr, flush=True)
            start = time.perf_counter()
            for _ in range(units):
                _unit_put(broker=broker, queue=queue, inputs=batch_inputs, timeout_ms=timeout_ms, begun=begun)
            results.append(Result("in-process", put_label, 1, batch, total, time.perf_counter() - start))

            if progress:
                print(f"  in-process {get_label}, batch {batch}: {total} messages", file=sys.stderr, flush=True)
            got = 0
            start = time.perf_counter()
            for _ in range(units):
                got += _unit_get(broker=broker, queue=queue, batch=batch, timeout_ms=timeout_ms, begun=begun)
            seconds = time.perf_counter() - start
            if got != total:
                raise BenchmarkError(f"in-process {get_label}, batch {batch}: got {got} messages of the {total} put.")
            results.append(Result("in-process", get_label, 1, batch, got, seconds))
    return results


def run_inprocess_flows(*, broker: str, messages: int, progress: bool = False) -> list[Result]:
    """The queue scenarios (:mod:`.flows`) with the services called from threads: an
    immediate persistent put (durable when it returns) and an immediate get, each thread
    with its own database connection."""
    from django.db import connection

    body = body_text().encode("ascii")

    def open_sides(clients: int, batch: int):
        queue = queue_name("flow_in", clients, batch)
        inputs = [MessageInput(body=body, persistence=Persistence.PERSISTENT) for _ in range(batch)]

        def producer():
            def put(n: int) -> None:
                message_put(broker=broker, queue=queue, messages=inputs[:n])

            return put, connection.close

        def consumer():
            def get(n: int) -> int:
                return len(message_get(broker=broker, queue=queue, batch=n, wait=GET_WAIT_S).messages)

            return get, connection.close

        return producer, consumer

    return flows(label="in-process", operation="put+get", messages=messages, progress=progress, open_sides=open_sides)

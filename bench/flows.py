"""The queue scenarios: producers and consumers running at once on one queue, every call
acknowledged before the next (a put's reply means the message is on disk; a get outside a
unit of work is final). One message per call and 100 per call; 1 producer + 1 consumer and
4 + 4 (8 clients). The figure is messages through the queue per second, from the start
until the consumers have them all.

The same flow runs over Baton in process (the services called from threads), through the
Python client over REST and over a session (its default transport), and over the peers:
a plain PostgreSQL table queue (``INSERT`` + ``COMMIT``; ``DELETE … FOR UPDATE SKIP LOCKED
… RETURNING`` + ``COMMIT``) and RabbitMQ (:mod:`.rabbitmq`).
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Callable

from .report import BenchmarkError, Result, body_text

#: (producers + consumers) measured.
FLOW_CLIENTS = (2, 8)
FLOW_BATCHES = (1, 100)
#: A consumer's server-side wait when the queue is empty (seconds).
GET_WAIT_S = 1.0
FLOW_TIMEOUT_S = 600.0

#: A producer: put ``n`` messages (one call). A consumer: get up to ``n`` (one call), return how many.
Put = Callable[[int], None]
Get = Callable[[int], int]


def flow_messages(messages: int, *, batch: int, clients: int) -> int:
    """``messages`` one at a time, ten times as many by 100; whole calls for every producer."""
    wanted = messages if batch == 1 else messages * 10
    step = batch * (clients // 2)
    return max(step, -(-wanted // step) * step)


def flow_run(
    *,
    clients: int,
    batch: int,
    total: int,
    producer: Callable[[], tuple[Put, Callable[[], None]]],
    consumer: Callable[[], tuple[Get, Callable[[], None]]],
) -> float:
    """Start ``clients // 2`` producers and as many consumers (each opens its own connection
    with ``producer()`` / ``consumer()``, which return the call and a close), release them
    together, and return the seconds until ``total`` messages were got."""
    pairs = clients // 2
    calls_each = total // batch // pairs
    start_line = threading.Barrier(clients + 1)
    lock = threading.Lock()
    got = [0]
    errors: list[BaseException] = []
    deadline = [0.0]
    finished = [0.0]

    def run(open_side, is_producer: bool) -> None:
        try:
            call, close = open_side()
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)
            start_line.abort()
            return
        try:
            start_line.wait()
            if is_producer:
                for _ in range(calls_each):
                    if errors:
                        return
                    call(batch)
                return
            while not errors:
                with lock:
                    if got[0] >= total:
                        return
                n = call(batch)
                with lock:
                    got[0] += n
                    if n and got[0] >= total:
                        finished[0] = time.perf_counter()  # the others may still be in a waiting get
                if time.monotonic() > deadline[0]:
                    raise BenchmarkError(f"flow: {got[0]} of {total} messages after {FLOW_TIMEOUT_S:g} s.")
        except threading.BrokenBarrierError:
            pass
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)
        finally:
            close()

    threads = [threading.Thread(target=run, args=(producer, True), daemon=True) for _ in range(pairs)]
    threads += [threading.Thread(target=run, args=(consumer, False), daemon=True) for _ in range(pairs)]
    for thread in threads:
        thread.start()
    deadline[0] = time.monotonic() + FLOW_TIMEOUT_S
    try:
        start_line.wait()
    except threading.BrokenBarrierError:
        pass
    start = time.perf_counter()
    for thread in threads:
        while thread.is_alive():
            thread.join(0.2)
    seconds = (finished[0] or time.perf_counter()) - start
    if errors:
        raise errors[0] if isinstance(errors[0], BenchmarkError) else BenchmarkError(f"flow: {errors[0]!r}")
    if got[0] != total:
        raise BenchmarkError(f"flow: got {got[0]} of {total} messages.")
    return seconds


def flows(
    *,
    label: str,
    operation: str,
    messages: int,
    progress: bool,
    open_sides: Callable[[int, int], tuple[Callable, Callable]],
) -> list[Result]:
    """Every (clients, batch) flow for one path; ``open_sides(clients, batch)`` gives the
    producer and consumer factories for that flow's queue."""
    results = []
    for clients in FLOW_CLIENTS:
        for batch in FLOW_BATCHES:
            total = flow_messages(messages, batch=batch, clients=clients)
            if progress:
                print(
                    f"  {label} {operation}, {clients // 2}+{clients // 2} clients, batch {batch}: {total} messages",
                    file=sys.stderr,
                    flush=True,
                )
            producer, consumer = open_sides(clients, batch)
            seconds = flow_run(clients=clients, batch=batch, total=total, producer=producer, consumer=consumer)
            results.append(Result(label, operation, clients, batch, total, seconds))
    return results


# --- Baton through the Python client (REST or session) -------------------------------------


def client_flows(
    *, base_url: str, token: str, broker: str, transport: str, messages: int, progress: bool = False
) -> list[Result]:
    """The flows through :class:`baton_client.Client` with ``transport`` "rest" or "session"."""
    from baton_client import Client

    from .report import queue_name

    body = body_text()
    label = "REST" if transport == "rest" else "session"

    def open_sides(clients: int, batch: int):
        queue = queue_name(f"flow_{transport}", clients, batch)
        bodies = [body] * batch

        def producer():
            client = Client(base_url, token, timeout=120, transport=transport)
            client.display_queue(broker, queue)  # connect before the clock starts
            if transport == "session":
                client.browse_page(broker, queue, limit=1)  # opens the session

            def put(n: int) -> None:
                if n == 1:
                    client.put(broker, queue, body, persistence="persistent")
                else:
                    client.put(broker, queue, messages=bodies, persistence="persistent")

            return put, client.close

        def consumer():
            client = Client(base_url, token, timeout=120, transport=transport)
            client.display_queue(broker, queue)
            if transport == "session":
                client.browse_page(broker, queue, limit=1)

            def get(n: int) -> int:
                return len(client.get(broker, queue, batch=n, wait=GET_WAIT_S))

            return get, client.close

        return producer, consumer

    warm = Client(base_url, token, timeout=120, transport=transport)
    try:
        from .report import WARMUP_QUEUE

        for _ in range(3):
            warm.put(broker, WARMUP_QUEUE, messages=[body, body])
            warm.get(broker, WARMUP_QUEUE, batch=2)
    finally:
        warm.close()
    return flows(label=label, operation="put+get", messages=messages, progress=progress, open_sides=open_sides)


# --- the plain PostgreSQL table queue -------------------------------------------------------

PLAIN_QUEUE = "plain PostgreSQL queue"


def run_plain_postgres_queue(*, database_url: str, messages: int, progress: bool = False) -> list[Result]:
    """A table as a queue on PostgreSQL, at the same durability as Baton's (a session with
    ``synchronous_commit=on``): a producer ``INSERT``s and ``COMMIT``s (a batch: one
    multi-row insert, one commit); a consumer ``DELETE``s the oldest rows it can lock
    without waiting (``FOR UPDATE SKIP LOCKED``) ``RETURNING`` them and ``COMMIT``s, polling
    every millisecond when the table is empty. A scratch table, dropped at the end."""
    import secrets

    import psycopg

    from .plain import postgres_conninfo

    conninfo = postgres_conninfo(database_url)
    table = f"baton_benchmark_queue_{secrets.token_hex(4)}"
    body = body_text().encode("ascii")
    with psycopg.connect(conninfo, autocommit=True, connect_timeout=30) as admin:
        admin.execute(f"CREATE TABLE {table} (id bigserial PRIMARY KEY, body bytea NOT NULL)")
    insert = f"INSERT INTO {table} (body) SELECT %s FROM generate_series(1, %s)"
    delete = (
        f"DELETE FROM {table} WHERE id IN (SELECT id FROM {table} ORDER BY id "
        f"FOR UPDATE SKIP LOCKED LIMIT %s) RETURNING id, body"
    )

    def connected():
        conn = psycopg.connect(conninfo, connect_timeout=30)
        conn.execute("SET synchronous_commit = on")
        conn.commit()
        return conn

    def open_sides(clients: int, batch: int):
        def producer():
            conn = connected()

            def put(n: int) -> None:
                conn.execute(insert, (body, n), prepare=True)
                conn.commit()

            return put, conn.close

        def consumer():
            conn = connected()

            def get(n: int) -> int:
                rows = conn.execute(delete, (n,), prepare=True).fetchall()
                conn.commit()
                if not rows:
                    time.sleep(0.001)  # an empty table: poll again in a millisecond
                return len(rows)

            return get, conn.close

        return producer, consumer

    try:
        return flows(
            label=PLAIN_QUEUE, operation="insert+delete", messages=messages, progress=progress, open_sides=open_sides
        )
    finally:
        with psycopg.connect(conninfo, autocommit=True, connect_timeout=30) as admin:
            admin.execute(f"DROP TABLE IF EXISTS {table}")

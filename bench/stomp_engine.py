"""``benchmark_stomp``'s reference row: the STOMP race's load through the same engine
operations the STOMP server calls (``stomp_server.engine``), in one process, with no
protocol, no sockets and no frames. Runs in a child process on the scratch database
(``manage.py benchmark_stomp --phase engine``), after the STOMP server has stopped.

What it shows: how fast Baton's engine moves the race's messages on its own. A STOMP figure
can reach it at best; where it is below RabbitMQ's STOMP figure, 1.0x is out of reach for
the STOMP server and waits on the engine's cost per operation (docs/performance.md).

- ``send+receipt``: a producer thread puts each message on its own (a durable commit each);
  a consumer thread gets what is there, peek-locked (up to ``prefetch-count`` 100, woken by
  the queue's commits as a STOMP subscription is) and completes each lock on its own.
- ``transaction/100``: the producer puts 100 in one unit of work and commits it; the
  consumer completes 100 locks under one unit of work and commits it.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import connections

from stomp_server import engine
from transactions.wakeups import wait_for

from .report import BenchmarkError, body_text, raced

PREFETCH = 100
WAIT_S = 30


def _flow(user, *, broker: str, queue: str, total: int, batch: int) -> float:
    body = body_text().encode()
    fields = {"persistence": "persistent"}
    key = engine.queue_key(broker=broker, queue=queue)[0]

    def produce(ready) -> None:
        ready()
        try:
            for _ in range(0, total, batch):
                if batch == 1:
                    engine.message_send(user, broker=broker, queue=queue, fields=fields, body=body, transaction=None)
                    continue
                txn = engine.transaction_begun(user, broker=broker)
                engine.messages_send(
                    user, broker=broker, queue=queue, messages=[(fields, body)] * batch, transaction=txn
                )
                engine.transaction_committed(user, transaction=txn, wait=0)
        finally:
            connections.close_all()

    def consume(ready) -> None:
        ready()
        try:
            tokens: list[str] = []
            done = 0
            while done < total:
                got = wait_for(
                    lambda: engine.messages_got(user, broker=broker, queue=queue, mode="peek_lock", batch=PREFETCH),
                    keys=[key],
                    wait_s=WAIT_S,
                )
                if not got:
                    raise BenchmarkError(f"no message within {WAIT_S} s")
                for message in got:
                    if batch == 1:
                        engine.lock_completed(user, token=message.lock_token, transaction=None)
                        done += 1
                        continue
                    tokens.append(message.lock_token)
                    if len(tokens) == batch:
                        txn = engine.transaction_begun(user, broker=broker)
                        engine.locks_completed(user, tokens=tokens, transaction=txn)
                        engine.transaction_committed(user, transaction=txn, wait=0)
                        done += batch
                        tokens = []
        finally:
            connections.close_all()

    return raced([produce, consume], what="the engine alone")


def engine_race(*, username: str, broker: str, queue: str, messages: int, scenarios, rounds: int = 1) -> list[dict]:
    """The race's scenarios through the engine alone, ``rounds`` times: one row per round,
    as ``StompResult`` takes them."""
    user = get_user_model().objects.get(username=username)
    _flow(user, broker=broker, queue=queue, total=20, batch=1)  # warm-up
    rows = []
    for _ in range(rounds):
        for scenario, batch in scenarios:
            total = max(batch, messages // batch * batch)
            seconds = _flow(user, broker=broker, queue=queue, total=total, batch=batch)
            rows.append({"scenario": scenario, "batch": batch, "messages": total, "seconds": seconds})
    return rows

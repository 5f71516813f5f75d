"""The RabbitMQ peer: Debian's ``rabbitmq-server`` started on loopback in a scratch
directory of its own (its own epmd on a free port, no plugins), and Python's ``pika``
(the ``bench`` extra) moving the same 1 KiB messages as Baton's queue scenarios.

Persistent messages (``delivery_mode=2``) on a durable classic queue; the producer uses
publisher confirms (each publish waits for the broker's confirm, which RabbitMQ sends once
the message is written to disk: fsync'd); the consumer uses manual acknowledgements, one
per message, with a prefetch of the batch size. Producers and consumers run concurrently,
each on its own connection, like Baton's queue scenarios. Needs no Django.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from .report import BenchmarkError, Result, body_text, raced
from tests.support.rabbitmqserver import RabbitMQNode, rabbitmq_missing, rabbitmq_node

PATH_LABEL = "RabbitMQ"


def rabbitmq_available() -> str | None:
    """None when the peer can run here, else what is missing."""
    try:
        import pika  # noqa: F401
    except ImportError:
        return "pika is not installed (pip install -e '.[bench]')"
    return rabbitmq_missing()


@contextmanager
def rabbitmq_server(*, keep: bool = False, stomp: bool = False) -> Iterator[tuple[RabbitMQNode, str]]:
    """A throwaway RabbitMQ node (``tests.support.rabbitmqserver``), with its STOMP adapter
    if ``stomp`` (``benchmark_stomp``); yield it and a description."""
    missing = rabbitmq_available()
    if missing:
        raise BenchmarkError(f"RabbitMQ peer: {missing}.")
    with rabbitmq_node(stomp=stomp, keep=keep) as node:
        describe = (
            f"{node.version} on 127.0.0.1:{node.amqp_port}, data in {node.directory} "
            "(durable classic queue, persistent messages, publisher confirms, manual acks)"
        )
        yield node, describe


def _connection(url: str):
    import pika

    return pika.BlockingConnection(pika.URLParameters(url))


def _flow(url: str, *, queue: str, total: int, batch: int, producers: int, consumers: int, body: bytes) -> float:
    """``producers`` publish ``total`` messages (confirmed one by one; for a batch, a
    publish of ``batch`` messages then their confirms: pika's blocking channel confirms each
    publish, so a batch is ``batch`` confirmed publishes back to back), ``consumers`` ack
    them one by one; returns the seconds from the start until the last is acked."""
    import pika

    setup = _connection(url)
    channel = setup.channel()
    channel.queue_declare(queue=queue, durable=True)
    channel.queue_purge(queue=queue)
    setup.close()
    properties = pika.BasicProperties(delivery_mode=2, content_type="text/plain")
    each_p, each_c = total // producers, total // consumers

    def produce(ready) -> None:
        conn = _connection(url)
        ch = conn.channel()
        ch.confirm_delivery()
        ready()
        for _ in range(each_p):
            ch.basic_publish("", queue, body, properties, mandatory=False)
        conn.close()

    def consume(ready) -> None:
        conn = _connection(url)
        ch = conn.channel()
        ch.basic_qos(prefetch_count=max(batch, 1))
        got = 0
        ready()
        for method, _props, _body in ch.consume(queue, auto_ack=False, inactivity_timeout=60):
            if method is None:
                raise BenchmarkError(f"RabbitMQ consumer: nothing for 60 s after {got} messages.")
            ch.basic_ack(method.delivery_tag)
            got += 1
            if got == each_c:
                break
        ch.cancel()
        conn.close()

    return raced([produce] * producers + [consume] * consumers, what="RabbitMQ peer")


def run_rabbitmq(*, url: str, flows: list[tuple[int, int, int]], progress: bool = False) -> list[Result]:
    """For each (producers+consumers, batch, messages): the same flow as Baton's queue scenarios."""
    body = body_text().encode("ascii")
    _flow(url, queue="baton.bench.warmup", total=20, batch=1, producers=1, consumers=1, body=body)
    results = []
    for clients, batch, total in flows:
        if progress:
            print(
                f"  RabbitMQ publish+ack, {clients} clients, {total} messages",
                flush=True,
                file=__import__("sys").stderr,
            )
        seconds = _flow(
            url,
            queue=f"baton.bench.c{clients}.b{batch}",
            total=total,
            batch=batch,
            producers=clients // 2,
            consumers=clients // 2,
            body=body,
        )
        results.append(Result(PATH_LABEL, "publish+ack", clients, batch, total, seconds))
    return results

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

import os
import shutil
import socket
import subprocess
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from .report import BenchmarkError, Result, body_text, raced

SERVER = Path("/usr/lib/rabbitmq/bin/rabbitmq-server")
EPMD = "epmd"
PATH_LABEL = "RabbitMQ"
START_TIMEOUT_S = 120


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def rabbitmq_available() -> str | None:
    """None when the peer can run here, else what is missing."""
    try:
        import pika  # noqa: F401
    except ImportError:
        return "pika is not installed (pip install -e '.[bench]')"
    if not SERVER.exists() or shutil.which(EPMD) is None:
        return "Debian's rabbitmq-server is not installed (apt-get install rabbitmq-server)"
    return None


def _stop(proc: subprocess.Popen, grace_s: float = 20) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextmanager
def rabbitmq_server(*, keep: bool = False, stomp_port: int | None = None) -> Iterator[tuple[str, str]]:
    """Start a throwaway RabbitMQ node; yield its AMQP URL and a description; stop it (and
    its epmd) on the way out. With ``stomp_port``, its STOMP plugin listens there too
    (``benchmark_stomp``)."""
    missing = rabbitmq_available()
    if missing:
        raise BenchmarkError(f"RabbitMQ peer: {missing}.")
    directory = Path(tempfile.mkdtemp(prefix="baton-benchmark-rabbitmq-"))
    epmd_port, amqp_port, dist_port = _free_port(), _free_port(), _free_port()
    (directory / "enabled_plugins").write_text("[rabbitmq_stomp].\n" if stomp_port else "[].\n")
    if stomp_port:
        (directory / "rabbitmq.conf").write_text(f"stomp.listeners.tcp.1 = 127.0.0.1:{stomp_port}\n")
    env = {
        **os.environ,
        "HOME": str(directory),
        "ERL_EPMD_PORT": str(epmd_port),
        "RABBITMQ_NODENAME": f"baton-bench-{amqp_port}@localhost",
        "RABBITMQ_NODE_IP_ADDRESS": "127.0.0.1",
        "RABBITMQ_NODE_PORT": str(amqp_port),
        "RABBITMQ_DIST_PORT": str(dist_port),
        "RABBITMQ_MNESIA_BASE": str(directory / "mnesia"),
        "RABBITMQ_LOG_BASE": str(directory / "log"),
        "RABBITMQ_ENABLED_PLUGINS_FILE": str(directory / "enabled_plugins"),
        "RABBITMQ_CONFIG_FILE": str(directory / "rabbitmq"),
        "RABBITMQ_CONF_ENV_FILE": str(directory / "env.conf"),
        "RABBITMQ_ADVANCED_CONFIG_FILE": str(directory / "advanced.config"),
        "RABBITMQ_PID_FILE": str(directory / "pid"),
        "RABBITMQ_LOGS": "-",
    }
    log = open(directory / "server.log", "wb")
    epmd = subprocess.Popen(
        [EPMD, "-port", str(epmd_port)],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    server = None
    try:
        server = subprocess.Popen(
            [str(SERVER)],
            env=env,
            cwd=directory,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if server.poll() is not None:
                raise BenchmarkError(f"RabbitMQ exited while starting; log: {directory / 'server.log'}")
            try:
                socket.create_connection(("127.0.0.1", stomp_port or amqp_port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise BenchmarkError(f"RabbitMQ did not listen within {START_TIMEOUT_S} s") from None
                time.sleep(0.2)  # polling the port of a starting server
        version = ""
        for line in (directory / "server.log").read_text(errors="replace").splitlines():
            if "RabbitMQ " in line and "Starting" in line:
                version = line.split("Starting", 1)[1].strip()
                break
        describe = (
            f"{version or 'RabbitMQ (Debian)'} on 127.0.0.1:{amqp_port}, data in {directory} "
            "(durable classic queue, persistent messages, publisher confirms, manual acks)"
        )
        yield f"amqp://guest:guest@127.0.0.1:{amqp_port}/%2F", describe
    finally:
        if server is not None:
            _stop(server)
        _stop(epmd, grace_s=5)
        log.close()
        if not keep:
            shutil.rmtree(directory, ignore_errors=True)


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

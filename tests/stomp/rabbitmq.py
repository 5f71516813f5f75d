"""RabbitMQ's STOMP adapter for the differential tests: Debian's ``rabbitmq-server`` (3.10,
``rabbitmq_stomp``) started on loopback in a scratch directory of its own (its own epmd and
ports, its own node name), stopped by its process ids. ``platform/lib.sh``'s
``rabbitmq_ready`` installs the package; without it the differential tests fail, saying so."""

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

SERVER = Path("/usr/lib/rabbitmq/bin/rabbitmq-server")
START_TIMEOUT_S = 180


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _stopped(proc: subprocess.Popen, grace_s: float = 20) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextmanager
def rabbitmq_stomp_server() -> Iterator[int]:
    """A RabbitMQ node whose STOMP adapter listens on a free loopback port; yields the port."""
    if not SERVER.exists() or shutil.which("epmd") is None:
        raise RuntimeError(
            "RabbitMQ is not installed: the differential STOMP tests need Debian's rabbitmq-server "
            "(platform/lib.sh: rabbitmq_ready; apt-get install rabbitmq-server)"
        )
    directory = Path(tempfile.mkdtemp(prefix="baton-test-rabbitmq-"))
    epmd_port, amqp_port, dist_port, stomp_port = (_free_port() for _ in range(4))
    (directory / "enabled_plugins").write_text("[rabbitmq_stomp].\n")
    (directory / "rabbitmq.conf").write_text(
        f"stomp.listeners.tcp.1 = 127.0.0.1:{stomp_port}\nloopback_users = none\n"
        "stomp.default_user = guest\nstomp.default_pass = guest\n"
    )
    env = {
        **os.environ,
        "HOME": str(directory),
        "ERL_EPMD_PORT": str(epmd_port),
        "RABBITMQ_NODENAME": f"baton-test-{stomp_port}@localhost",
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
        ["epmd", "-port", str(epmd_port)], env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
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
                raise RuntimeError(
                    f"RabbitMQ exited while starting:\n{(directory / 'server.log').read_text(errors='replace')[-3000:]}"
                )
            try:
                socket.create_connection(("127.0.0.1", stomp_port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"RabbitMQ's STOMP adapter did not listen within {START_TIMEOUT_S} s") from None
                time.sleep(0.2)  # polling the port of a starting server
        yield stomp_port
    finally:
        if server is not None:
            _stopped(server)
        _stopped(epmd, grace_s=5)
        log.close()
        shutil.rmtree(directory, ignore_errors=True)

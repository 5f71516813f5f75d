"""A throwaway RabbitMQ node (Debian's ``rabbitmq-server``) for the differential STOMP
tests and the benchmarks' RabbitMQ peer: a scratch directory of its own, its own epmd and
ports on loopback, its own node name; ``rabbitmq_stomp`` enabled when a STOMP port is
asked for. Stopped by its process ids and its directory removed on the way out, errors and
Ctrl-C included. ``platform/lib.sh``'s ``rabbitmq_ready`` installs the package."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .errors import BenchmarkError
from .scratch import HOST, free_port, process_stopped

SERVER = Path("/usr/lib/rabbitmq/bin/rabbitmq-server")
EPMD = "epmd"
#: A node starting under the test suite's two passes at once has taken over a minute.
START_TIMEOUT_S = 180


@dataclass(frozen=True)
class RabbitMQNode:
    directory: Path
    amqp_port: int
    stomp_port: int | None
    version: str  # as its log says it, e.g. "RabbitMQ 3.10.8 on Erlang 25.2.3 [jit]"

    @property
    def amqp_url(self) -> str:
        return f"amqp://guest:guest@{HOST}:{self.amqp_port}/%2F"


def rabbitmq_missing() -> str | None:
    """None when a node can start here, else what is missing."""
    if not SERVER.exists() or shutil.which(EPMD) is None:
        return (
            "Debian's rabbitmq-server is not installed "
            "(platform/lib.sh: rabbitmq_ready; apt-get install rabbitmq-server)"
        )
    return None


def _version(log: Path) -> str:
    for line in log.read_text(errors="replace").splitlines():
        if "RabbitMQ " in line and "Starting" in line:
            return line.split("Starting", 1)[1].strip()
    return "RabbitMQ (Debian)"


@contextmanager
def rabbitmq_node(*, stomp: bool = False, keep: bool = False) -> Iterator[RabbitMQNode]:
    """Start a node (with its STOMP adapter on a free port if ``stomp``: user ``guest``,
    which may sign in over loopback); yield it once the port clients use listens; stop it
    and its epmd. ``keep``: leave the directory (data and ``server.log``) behind."""
    missing = rabbitmq_missing()
    if missing:
        raise BenchmarkError(f"RabbitMQ: {missing}.")
    directory = Path(tempfile.mkdtemp(prefix="baton-rabbitmq-"))
    epmd_port, amqp_port, dist_port = free_port(), free_port(), free_port()
    stomp_port = free_port() if stomp else None
    (directory / "enabled_plugins").write_text("[rabbitmq_stomp].\n" if stomp else "[].\n")
    if stomp:
        (directory / "rabbitmq.conf").write_text(
            f"stomp.listeners.tcp.1 = {HOST}:{stomp_port}\nloopback_users = none\n"
            "stomp.default_user = guest\nstomp.default_pass = guest\n"
        )
    env = {
        **os.environ,
        "HOME": str(directory),
        "ERL_EPMD_PORT": str(epmd_port),
        "RABBITMQ_NODENAME": f"baton-{amqp_port}@localhost",
        "RABBITMQ_NODE_IP_ADDRESS": HOST,
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
    log_path = directory / "server.log"
    log = open(log_path, "wb")
    common = {"env": env, "stdin": subprocess.DEVNULL, "stdout": log, "stderr": subprocess.STDOUT}
    epmd = subprocess.Popen([EPMD, "-port", str(epmd_port)], start_new_session=True, **common)
    server = None
    try:
        server = subprocess.Popen([str(SERVER)], cwd=directory, start_new_session=True, **common)
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if server.poll() is not None:
                tail = log_path.read_text(errors="replace")[-3000:]
                raise BenchmarkError(f"RabbitMQ exited while starting; {log_path} ends:\n{tail}")
            try:
                socket.create_connection((HOST, stomp_port or amqp_port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise BenchmarkError(f"RabbitMQ did not listen within {START_TIMEOUT_S} s ({log_path})") from None
                time.sleep(0.2)  # polling the port of a starting server
        yield RabbitMQNode(directory, amqp_port, stomp_port, _version(log_path))
    finally:
        if server is not None:
            process_stopped(server, grace_s=20)
        process_stopped(epmd, grace_s=5)
        log.close()
        if not keep:
            shutil.rmtree(directory, ignore_errors=True)

"""A throwaway Redis server (Debian's ``redis-server``) for the wake-up benchmark and the
scaled-out tests: a temporary directory, a free loopback port, no persistence. It is
shut down and its directory removed on the way out, errors and Ctrl-C included."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .errors import BenchmarkError
from tests.support.scratch import HOST, free_port

START_TIMEOUT_S = 30


class RedisServer:
    def __init__(self, *, url: str, proc: subprocess.Popen, directory: Path, version: str) -> None:
        self.url, self.proc, self.directory, self.version = url, proc, directory, version

    def database(self, number: int) -> str:
        """The URL of one of its numbered databases."""
        return f"{self.url}/{number}"

    def describe(self) -> str:
        return f"a throwaway Redis {self.version} server on {self.url} (no persistence)"


def redis_binary() -> str:
    binary = shutil.which("redis-server") or ("/usr/bin/redis-server" if Path("/usr/bin/redis-server").exists() else "")
    if not binary:
        raise BenchmarkError(
            "no redis-server on PATH (on Debian: apt-get install -y redis-server; platform/lib.sh does it)"
        )
    return binary


@contextmanager
def redis_server() -> Iterator[RedisServer]:
    """Start a throwaway server, yield it, stop it."""
    import redis

    binary = redis_binary()
    version = subprocess.run(
        [binary, "--version"], check=False, capture_output=True, text=True, timeout=30
    ).stdout.split()[2][2:]
    directory = Path(tempfile.mkdtemp(prefix="baton-redis-"))
    port = free_port()
    log = directory / "server.log"
    proc = subprocess.Popen(
        [
            binary,
            "--port",
            str(port),
            "--bind",
            HOST,
            "--dir",
            str(directory),
            "--save",
            "",
            "--appendonly",
            "no",
            "--daemonize",
            "no",
            "--logfile",
            str(log),
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        client = redis.Redis(host=HOST, port=port, socket_connect_timeout=1)
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                if client.ping():
                    break
            except redis.ConnectionError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                text = log.read_text(errors="replace")[-2000:] if log.exists() else ""
                raise BenchmarkError(f"redis-server did not start on port {port} (exit {proc.poll()}):\n{text}")
            time.sleep(0.05)  # polling interval of a bounded start-up loop
        client.close()
        yield RedisServer(url=f"redis://{HOST}:{port}", proc=proc, directory=directory, version=version)
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        shutil.rmtree(directory, ignore_errors=True)

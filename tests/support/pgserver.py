"""A throwaway PostgreSQL server for ``python manage.py benchmark --postgres``.

Debian's binaries (``/usr/lib/postgresql/<version>/bin``, the newest); ``initdb`` and
``pg_ctl`` run as the ``postgres`` user (``runuser -u postgres --``) when we are root.
The cluster lives in a temporary directory, listens on a free loopback port only (and a
Unix socket in that directory), trusts local connections, and runs with the durability
settings of a production server: ``fsync=on``, ``synchronous_commit=on``,
``full_page_writes=on`` (set explicitly, so that no default or configuration file can
weaken them). It is stopped (``pg_ctl stop -m fast``) and its directory removed on the
way out, errors and Ctrl-C included.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from .errors import BenchmarkError
from tests.support.scratch import HOST, free_port

PG_ROOT = Path("/usr/lib/postgresql")
USER = "baton"
DATABASE = "baton_benchmark"
#: Server settings: durable, loopback only, small enough for a 2-core machine.
SETTINGS = {
    "listen_addresses": HOST,
    "fsync": "on",
    "synchronous_commit": "on",
    "full_page_writes": "on",
    "max_connections": "50",
}


def pg_bin() -> Path:
    """The newest installed version's bin directory."""

    def version(path: Path) -> tuple[int, ...]:
        return tuple(int(n) for n in re.findall(r"\d+", path.name)) or (0,)

    candidates = sorted((p for p in PG_ROOT.glob("*") if (p / "bin" / "initdb").exists()), key=version)
    if not candidates:
        raise BenchmarkError(
            f"--postgres: no PostgreSQL server binaries under {PG_ROOT}/*/bin "
            "(on Debian: apt-get install -y postgresql)."
        )
    return candidates[-1] / "bin"


class PostgresServer:
    """What a started server is: its URL, its version and how it was started."""

    def __init__(self, *, url: str, bin_dir: Path, directory: Path, command: list[str]) -> None:
        self.url = url
        self.bin_dir = bin_dir
        self.directory = directory
        self.command = command

    def describe(self) -> str:
        options = " ".join(f"{k}={v}" for k, v in SETTINGS.items() if k != "listen_addresses")
        return f"a throwaway PostgreSQL server ({self.bin_dir}) on {self.url} with {options}"


def _run(args: list[str], *, what: str, log: Path | None = None, timeout: float = 120) -> None:
    proc = subprocess.run(args, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        tail = log.read_text(errors="replace")[-2000:] if log and log.exists() else ""
        raise BenchmarkError(
            f"--postgres: {what} failed (exit status {proc.returncode}): "
            f"{' '.join(args)}\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}{tail}".rstrip()
        )


@contextmanager
def postgres_server(*, keep: bool = False) -> Iterator[PostgresServer]:
    """Start a throwaway server, yield it, stop it."""
    bin_dir = pg_bin()
    directory = Path(tempfile.mkdtemp(prefix="baton-benchmark-pg-"))
    as_pg: list[str] = []
    if os.geteuid() == 0:
        shutil.chown(directory, user="postgres")
        as_pg = ["runuser", "-u", "postgres", "--"]
    data, log = directory / "data", directory / "server.log"
    port = free_port()
    options = f"-p {port} -k {directory} " + " ".join(f"-c {k}={v}" for k, v in SETTINGS.items())
    start = as_pg + [str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(log), "-w", "-t", "60", "-o", options, "start"]
    stop = as_pg + [str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"]
    started = False
    try:
        _run(as_pg + [str(bin_dir / "initdb"), "-D", str(data), "-A", "trust", "-U", USER, "-E", "UTF8"], what="initdb")
        _run(start, what="pg_ctl start", log=log)
        started = True
        _run(as_pg + [str(bin_dir / "createdb"), "-h", HOST, "-p", str(port), "-U", USER, DATABASE], what="createdb")
        yield PostgresServer(
            url=f"postgres://{USER}@{HOST}:{port}/{DATABASE}", bin_dir=bin_dir, directory=directory, command=start
        )
    finally:
        try:
            if started:
                subprocess.run(stop, stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
        finally:
            if not keep:
                shutil.rmtree(directory, ignore_errors=True)

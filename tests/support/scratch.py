"""The scratch environment: a temporary directory, the database the benchmark runs on,
the child processes that work on it, and the Uvicorn server.

Every child gets ``DATABASE_URL`` and ``BATON_VAR_DIR`` pointing at the scratch
database and directory, and ``BATON_BENCHMARK_SCRATCH=1``, without which the command's
``--phase`` refuses to run (so a phase can never run against the platform's database).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator
from urllib.parse import urlsplit, urlunsplit

SCRATCH_FLAG = "BATON_BENCHMARK_SCRATCH"
HOST = "127.0.0.1"


def base_dir() -> Path:
    from django.conf import settings

    return Path(settings.BASE_DIR)


def url_masked(url: str) -> str:
    """A database URL fit to print: the password replaced."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


#: Uvicorn's WebSocket protocol, as platform/up and the image choose it: the sans-I/O one
#: (docs/performance.md, "The serving floor"). Every web server the benchmarks and the
#: tests start uses it.
WS_PROTOCOL = "websockets-sansio"


def server_command(port: int) -> list[str]:
    """The server's command line: platform/up's, on a loopback port, with as many web server
    processes as ``BATON_WEB_PROCESSES`` says (1 by default), as platform/up starts."""
    processes = int(os.environ.get("BATON_WEB_PROCESSES") or 1)
    return [
        sys.executable,
        "-m",
        "uvicorn",
        "config.asgi:application",
        "--ws",
        WS_PROTOCOL,
        "--host",
        HOST,
        "--port",
        str(port),
        "--lifespan",
        "off",
        "--log-level",
        "warning",
        "--no-access-log",
    ] + (["--workers", str(processes)] if processes > 1 else [])


def process_tree_cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system, from /proc) so far of process ``pid`` and every process
    under it (a server's worker processes), those gone meanwhile left out."""
    tick, total, todo = os.sysconf("SC_CLK_TCK"), 0.0, [pid]
    while todo:
        current = todo.pop()
        try:
            fields = Path(f"/proc/{current}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / tick
            for task in os.listdir(f"/proc/{current}/task"):
                todo += [int(child) for child in Path(f"/proc/{current}/task/{task}/children").read_text().split()]
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total


def _die_with_parent() -> None:
    """In a child, before exec: on Linux, have the kernel send SIGTERM when we die, even by
    SIGKILL, so that no server outlives the benchmark."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def process_stopped(proc: subprocess.Popen, *, grace_s: float = 10) -> None:
    """Stop a child: SIGTERM, then SIGKILL if it has not gone after ``grace_s``."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class Scratch:
    """A temporary directory with the benchmark's database (a fresh SQLite file in it,
    unless ``database_url`` names another database) and its log files."""

    def __init__(self, *, database_url: str | None = None, keep: bool = False) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="baton-benchmark-"))
        self.keep = keep
        self.own_database = database_url is None
        self.database_url = database_url or f"sqlite:///{self.dir / 'benchmark.sqlite3'}"
        self.env = {
            **os.environ,
            "DATABASE_URL": self.database_url,
            "BATON_VAR_DIR": str(self.dir),
            # the caller's: bench.settings for a benchmark (its phases are its own commands)
            "DJANGO_SETTINGS_MODULE": os.environ.get("DJANGO_SETTINGS_MODULE", "config.settings"),
            "BATON_DEBUG": "0",
            "BATON_LOG_LEVEL": "WARNING",
            "PYTHONUNBUFFERED": "1",
            SCRATCH_FLAG: "1",
        }
        self.env.pop("BATON_TEST_DATABASE", None)
        (self.dir / "celery" / "queue").mkdir(parents=True)
        (self.dir / "celery" / "processed").mkdir(parents=True)

    def close(self) -> None:
        if not self.keep:
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> "Scratch":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def log_tail(self, name: str, lines: int = 40) -> str:
        path = self.dir / name
        if not path.exists():
            return ""
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])

    def phase(self, name: str, *, command: str = "benchmark", **options) -> dict:
        """Run ``command`` (the benchmark's own) again as a child on the scratch database
        (``--phase name``) and return the JSON it leaves in its result file."""
        from .errors import BenchmarkError

        result_file = self.dir / f"{name}.json"
        args = [
            sys.executable,
            str(base_dir() / "manage.py"),
            command,
            "--phase",
            name,
            "--result-file",
            str(result_file),
        ]
        for key, value in options.items():
            args += [f"--{key.replace('_', '-')}", str(value)]
        log_path = self.dir / f"{name}.log"
        with open(log_path, "wb") as log:
            # stderr is the child's progress: shared with ours. Its stdout (nothing, normally)
            # goes to a log file so that our stdout stays the report.
            proc = subprocess.Popen(args, cwd=base_dir(), env=self.env, stdin=subprocess.DEVNULL, stdout=log)
            try:
                code = proc.wait()
            finally:
                process_stopped(proc, grace_s=5)
        if code != 0 or not result_file.exists():
            raise BenchmarkError(
                f"The {name} phase failed (exit status {code}): {shlex.join(args)}\n{self.log_tail(log_path.name)}"
            )
        return json.loads(result_file.read_text())

    @contextmanager
    def server(self) -> Iterator[tuple[str, list[str], subprocess.Popen]]:
        """Uvicorn serving the scratch database on a free loopback port; always stopped on
        the way out (errors and Ctrl-C included). Yields the base URL, the command line and
        the process. Its output goes to ``server.log`` in the scratch directory."""
        port = free_port()
        command = server_command(port)
        with open(self.dir / "server.log", "wb") as log:
            proc = subprocess.Popen(
                command,
                cwd=base_dir(),
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                # its own process group: a Ctrl-C reaches only us, and we stop it in order
                start_new_session=True,
                preexec_fn=_die_with_parent if sys.platform == "linux" else None,
            )
            try:
                yield f"http://{HOST}:{port}", command, proc
            finally:
                process_stopped(proc)


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Turn SIGTERM into KeyboardInterrupt while the benchmark runs, so that the
    ``finally`` blocks that stop the server run for it too."""

    def interrupted(signum, frame):
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGTERM, interrupted)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)

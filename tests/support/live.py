"""A live platform for the crash test and the soak benchmark: the web server (Uvicorn), a
Celery worker (channel agents, housekeeping) and Celery beat, started as ``platform/up``
starts them against a directory and database of their own, each in its own process group
so that one can be killed with SIGKILL and started again while the others run. The
scaled-out form runs ``webs`` web servers (each on a port of its own: ``web``, ``web2``…)
and ``workers`` workers (``worker``, ``worker2``…) on PostgreSQL and Redis (given in ``env``:
``CELERY_BROKER_URL``, ``BATON_REDIS_URL``); ``postgres_scratch_database`` makes the
database.

Needs no Django: every wait is a bounded polling loop that fails saying what it waited for.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from tests.support.scratch import WS_PROTOCOL

ROOT = Path(__file__).resolve().parents[2]
HOST = "127.0.0.1"
#: The processes a live platform runs, in start order (one web server and one worker).
PROCESSES = ("web", "worker", "beat")


def _numbered(kind: str, count: int) -> list[str]:
    return [kind if n == 1 else f"{kind}{n}" for n in range(1, count + 1)]


def _kind(name: str) -> tuple[str, int]:
    """``web2`` → ("web", 1): the process kind and its index."""
    kind = name.rstrip("0123456789")
    return kind, int(name[len(kind) :] or 1) - 1


@contextmanager
def postgres_scratch_database(server_url: str, prefix: str = "baton_live"):
    """A fresh database on the PostgreSQL server of ``server_url`` (any database URL on it),
    as a DATABASE_URL, dropped on the way out."""
    import secrets
    from urllib.parse import urlsplit, urlunsplit

    import psycopg

    parts = urlsplit(server_url)
    name = f"{prefix}_{os.getpid()}_{secrets.token_hex(3)}"
    admin = urlunsplit(("postgresql", parts.netloc, "/postgres", parts.query, ""))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield urlunsplit((parts.scheme, parts.netloc, f"/{name}", parts.query, ""))
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


#: A child that runs management commands one after the other in one process (one start of
#: Python and Django instead of one per command), as ``manage.py`` runs each, then prints
#: what each wrote to its stdout as a JSON list. ``argv[1]``: the commands, a JSON list of
#: argument lists.
MANAGE_EACH = """
import io, json, os, sys
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
import django
django.setup()
from django.core.management import call_command
outputs = []
for args in json.loads(sys.argv[1]):
    out = io.StringIO()
    call_command(*args, stdout=out)
    outputs.append(out.getvalue())
sys.stdout.write(json.dumps(outputs))
"""


class PlatformError(RuntimeError):
    """A process of the live platform failed to start or answer."""


def _die_with_parent() -> None:
    """In a child, before exec: have the kernel SIGTERM it when its parent dies (Linux)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _tail(path: Path, limit: int = 4000) -> str:
    try:
        text = path.read_text(errors="replace")
    except FileNotFoundError:
        return "(no output)"
    return text if len(text) <= limit else "…" + text[-limit:]


def _free_port() -> int:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


@dataclass
class Process:
    """One incarnation of a platform process."""

    name: str
    incarnation: int
    proc: subprocess.Popen
    log: Path

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None


@dataclass
class LivePlatform:
    """The platform's processes on ``var_dir`` and ``database_url``. ``env`` adds to (or
    overrides) the environment every process gets, e.g. short housekeeping intervals."""

    var_dir: Path
    database_url: str
    env: dict[str, str] = field(default_factory=dict)
    port: int = field(default_factory=_free_port)
    worker_concurrency: int = 2
    processes: dict[str, Process] = field(default_factory=dict)
    incarnations: dict[str, int] = field(default_factory=dict)
    token: str = ""
    webs: int = 1
    workers: int = 1
    #: The web servers' ports (the first is ``port``).
    ports: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.ports = [self.port] + [_free_port() for _ in range(self.webs - 1)]

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def urls(self) -> list[str]:
        """Every web server's URL (clients spread over them: no load balancer in between)."""
        return [f"http://{HOST}:{port}" for port in self.ports]

    def names(self) -> tuple[str, ...]:
        """The processes this platform runs, in start order."""
        return (*_numbered("web", self.webs), *_numbered("worker", self.workers), "beat")

    def environ(self) -> dict[str, str]:
        env = dict(os.environ)
        for name in (
            "DJANGO_SETTINGS_MODULE",
            "BATON_TEST_DATABASE",
            "BATON_REDIS_URL",
            "BATON_SECRET_KEY",
            "CELERY_BROKER_URL",
        ):
            env.pop(name, None)
        env.update(
            {
                "DJANGO_SETTINGS_MODULE": "config.settings",
                "BATON_VAR_DIR": str(self.var_dir),
                "DATABASE_URL": self.database_url,
                "BATON_LOG_LEVEL": "WARNING",
                "PYTHONUNBUFFERED": "1",
                "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
                **self.env,
            }
        )
        return env

    # -- preparing -------------------------------------------------------------------------
    def _run(self, argv: list[str], what: str, *, timeout: float) -> str:
        """``python <argv>`` in the source tree with the platform's environment; its stdout."""
        result = subprocess.run(
            [sys.executable, *argv],
            check=False,
            cwd=ROOT,
            env=self.environ(),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if result.returncode != 0:
            raise PlatformError(f"manage.py {what} failed ({result.returncode}):\n{result.stderr[-4000:]}")
        return result.stdout

    def manage(self, *args: str, timeout: float = 300) -> str:
        return self._run(["manage.py", *args], " ".join(args), timeout=timeout)

    def manage_each(self, *commands: list[str], timeout: float = 300) -> list[str]:
        """``manage`` for each of ``commands`` in turn, in one process; what each printed."""
        what = " / ".join(" ".join(c) for c in commands)
        return json.loads(self._run(["-c", MANAGE_EACH, json.dumps(list(commands))], what, timeout=timeout))

    def prepare(self, *, username: str = "baton-live") -> str:
        """What platform/up does before it starts the servers: the Celery folders, migrate,
        restart recovery; then an API token for a superuser. Returns the token."""
        (self.var_dir / "celery" / "queue").mkdir(parents=True, exist_ok=True)
        (self.var_dir / "celery" / "processed").mkdir(parents=True, exist_ok=True)
        (self.var_dir / "log").mkdir(parents=True, exist_ok=True)
        *_, token = self.manage_each(
            ["migrate", "--noinput", "-v0"],
            ["brokers_recover"],
            ["api_token", username, "--create-user", "--superuser"],
        )
        lines = [line.strip() for line in token.splitlines() if line.strip()]
        self.token = lines[-1]
        return self.token

    # -- processes -------------------------------------------------------------------------
    def _command(self, name: str) -> list[str]:
        kind, index = _kind(name)
        if kind == "web" and index < self.webs:
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
                str(self.ports[index]),
                "--lifespan",
                "off",
                "--log-level",
                "warning",
                "--no-access-log",
            ]
        if kind == "worker" and index < self.workers:
            return [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "config",
                "worker",
                "--pool",
                "threads",
                "--concurrency",
                str(self.worker_concurrency),
                "--loglevel",
                "INFO",
                "--hostname",
                f"{name}-{self.port}@%h",
            ]
        if name == "beat":
            return [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "config",
                "beat",
                "--loglevel",
                "INFO",
                "--schedule",
                str(self.var_dir / "celerybeat-schedule"),
            ]
        raise ValueError(f"No platform process {name!r}; one of {', '.join(self.names())}.")

    def spawn(self, name: str) -> Process:
        """Start ``name`` (web, worker or beat) without waiting for it."""
        number = self.incarnations.get(name, 0) + 1
        self.incarnations[name] = number
        log = self.var_dir / "log" / f"{name}-{number}.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                self._command(name),
                cwd=ROOT,
                env=self.environ(),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                # the kernel's parent-death signal follows the *thread* that started the child:
                # only ask for it from the main thread, which lives as long as we do
                preexec_fn=_die_with_parent
                if sys.platform == "linux" and threading.current_thread() is threading.main_thread()
                else None,
            )
        process = Process(name, number, proc, log)
        self.processes[name] = process
        return process

    def ready(self, name: str, *, timeout: float = 90) -> None:
        """Wait until ``name`` serves: the web server answers an authenticated request, the
        worker and beat have logged that they started."""
        process = self.processes[name]
        kind, index = _kind(name)
        if kind == "web":
            url = self.urls[index]

            def check() -> bool:
                with httpx.Client(timeout=2) as client:
                    return (
                        client.get(f"{url}/api/brokers/", headers={"Authorization": f"Token {self.token}"}).status_code
                        == 200
                    )
        else:
            text = "ready." if kind == "worker" else "beat: Starting"

            def check() -> bool:
                return text in _tail(process.log, 10**7)

        self._poll(check, process, timeout=timeout)

    def _poll(self, check: Callable[[], bool], process: Process, *, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        last: BaseException | None = None
        while True:
            if not process.alive():
                raise PlatformError(
                    f"{process.name} exited with status {process.proc.returncode} while starting:\n{_tail(process.log)}"
                )
            try:
                if check():
                    return
            except (httpx.HTTPError, OSError) as exc:
                last = exc
            if time.monotonic() >= deadline:
                raise PlatformError(
                    f"{process.name} was not ready after {timeout:g} s (last error: {last!r}):\n{_tail(process.log)}"
                )
            time.sleep(0.1)  # polling interval of a bounded loop

    def start(self, *names: str, timeout: float = 90) -> None:
        """Start the named processes (all of them by default) and wait until each is ready."""
        for name in names or self.names():
            self.spawn(name)
        for name in names or self.names():
            self.ready(name, timeout=timeout)

    def kill(self, name: str) -> int:
        """SIGKILL ``name``'s process group at once; returns the pid it had."""
        process = self.processes[name]
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.proc.wait(30)
        return process.pid

    def restart(self, name: str, *, timeout: float = 90) -> Process:
        """Start a new incarnation of ``name`` (after a kill) and wait until it is ready."""
        process = self.spawn(name)
        self.ready(name, timeout=timeout)
        return process

    def pids(self) -> dict[str, int]:
        return {name: p.pid for name, p in self.processes.items() if p.alive()}

    def stop(self, *, grace_s: float = 15) -> None:
        """SIGTERM every process group, then SIGKILL what is left after ``grace_s``."""
        for process in reversed(list(self.processes.values())):
            if process.alive():
                try:
                    os.killpg(process.pid, signal.SIGTERM)
                except ProcessLookupError:
                    continue
        deadline = time.monotonic() + grace_s
        for process in self.processes.values():
            try:
                process.proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            try:
                process.proc.wait(10)
            except subprocess.TimeoutExpired:
                pass

    def log_tail(self, name: str, limit: int = 3000) -> str:
        """The end of the current incarnation's log of ``name``."""
        return _tail(self.processes[name].log, limit)

    def logs(self, limit: int = 3000) -> str:
        """The end of every incarnation's log, for a failure report."""
        parts = []
        for path in sorted((self.var_dir / "log").glob("*.log")):
            parts.append(f"--- {path.name} ---\n{_tail(path, limit)}")
        return "\n".join(parts)

    def __enter__(self) -> LivePlatform:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

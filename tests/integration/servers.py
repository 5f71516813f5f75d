"""Real servers for the integration tests: Uvicorn, a Celery worker and Celery beat started
as subprocesses from the current virtualenv against a fresh temporary var directory and
SQLite database, the way ``platform/up`` starts them.

Every wait here is a bounded polling loop that fails with a message saying what it waited
for and what the processes wrote to stderr; nothing sleeps to synchronise.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, TypeVar

import httpx

from tests.support.live import MANAGE_EACH
from tests.support.scratch import WS_PROTOCOL

ROOT = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
T = TypeVar("T")

#: Every platform currently running, so that a failing test can show the servers' logs.
RUNNING: list["Platform"] = []


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def poll_until(
    check: Callable[[], T],
    *,
    timeout: float,
    what: str,
    interval: float = 0.05,
    diagnostics: Callable[[], str] = lambda: "",
) -> T:
    """Call ``check`` until it returns something truthy; fail after ``timeout`` seconds
    saying ``what`` never happened. ``check`` may raise AssertionError to stop at once."""
    deadline = time.monotonic() + timeout
    last_error: BaseException | None = None
    while True:
        try:
            result = check()
        except (httpx.HTTPError, OSError) as exc:  # not up yet
            result, last_error = None, exc
        if result:
            return result
        if time.monotonic() >= deadline:
            detail = f" (last error: {last_error!r})" if last_error else ""
            raise AssertionError(f"Timed out after {timeout:g}s waiting for {what}{detail}\n{diagnostics()}")
        time.sleep(interval)  # polling interval of a bounded loop, not synchronisation


def tail(path: Path, limit: int = 6000) -> str:
    try:
        text = path.read_text(errors="replace")
    except FileNotFoundError:
        return "(no output)"
    return text if len(text) <= limit else "…" + text[-limit:]


def process_exited(pid: int) -> bool:
    """True when ``pid`` no longer runs (gone, or a zombie nobody has reaped yet)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return True
    return state in ("Z", "X")


def session_processes(sid: int) -> list[int]:
    """Pids of the live processes in session ``sid`` (Linux /proc)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
        # after the command name: state, ppid, pgrp, session, ...
        if int(fields[3]) == sid and fields[0] not in ("Z", "X"):
            pids.append(int(entry.name))
    return pids


@dataclass
class Server:
    name: str
    proc: subprocess.Popen
    stdout: Path
    stderr: Path
    terminated: bool = False

    def alive(self) -> bool:
        return self.proc.poll() is None

    def logs(self) -> str:
        return (
            f"--- {self.name} (pid {self.proc.pid}, exit {self.proc.poll()}) stderr ---\n{tail(self.stderr)}\n"
            f"--- {self.name} stdout ---\n{tail(self.stdout, 2000)}\n"
        )

    def terminate(self) -> None:
        """SIGTERM the server's process group (once), without waiting."""
        if self.proc.poll() is None and not self.terminated:
            self.terminated = True
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass

    def stop(self, timeout: float = 15) -> None:
        """SIGTERM the server's process group, then SIGKILL what is left after ``timeout``."""
        if self.proc.poll() is None:
            self.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        # a process group may outlive its leader
        for pid in session_processes(self.proc.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def base_env(var_dir: Path) -> dict[str, str]:
    env = dict(os.environ)
    for name in ("DJANGO_SETTINGS_MODULE", "BATON_TEST_DATABASE", "BATON_REDIS_URL", "BATON_SECRET_KEY"):
        env.pop(name, None)
    env.update(
        {
            "BATON_VAR_DIR": str(var_dir),
            "DATABASE_URL": f"sqlite:///{var_dir / 'baton.sqlite3'}",
            "CELERY_BROKER_URL": "filesystem://",
            "BATON_HOUSEKEEPING_INTERVAL_S": "0.2",
            # no scheduled analytics (every 600 s by default): no test waits ten minutes
            # for one, and a platform living that long (tests/integration's, with the crash
            # tests inside its package) would start a Spark job (a JVM) for nothing;
            # analytics on request still run (tests/spark_jobs/live.py does the same)
            "BATON_ANALYTICS_INTERVAL_S": "0",
            "PYTHONUNBUFFERED": "1",
            "PATH": f"{Path(PYTHON).parent}{os.pathsep}{env.get('PATH', '')}",
        }
    )
    return env


def _manage_run(env: dict[str, str], argv: list[str], what: str, *, timeout: float, extra_env) -> str:
    """Run ``python <argv>`` in the source tree; return its stdout, or fail naming ``what``
    and showing its stderr."""
    result = subprocess.run(
        [PYTHON, *argv],
        cwd=ROOT,
        env={**env, **(extra_env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if result.returncode != 0:
        raise AssertionError(f"manage.py {what} failed ({result.returncode}):\n{result.stderr}\n{result.stdout}")
    return result.stdout


def manage(env: dict[str, str], *args: str, timeout: float = 120, extra_env: dict[str, str] | None = None) -> str:
    """Run ``python manage.py ...``; return its stdout, or fail showing its stderr."""
    return _manage_run(env, ["manage.py", *args], " ".join(args), timeout=timeout, extra_env=extra_env)


def manage_each(
    env: dict[str, str], *commands: list[str], timeout: float = 120, extra_env: dict[str, str] | None = None
) -> list[str]:
    """Run ``python manage.py ...`` for each of ``commands`` in turn, as ``manage`` does, but
    in one process (one start of Python and Django instead of one each); return what each
    wrote to stdout, or fail showing stderr."""
    what = " / ".join(" ".join(c) for c in commands)
    out = _manage_run(env, ["-c", MANAGE_EACH, json.dumps(list(commands))], what, timeout=timeout, extra_env=extra_env)
    return json.loads(out)


def users_granted(env: dict[str, str], names: list[str], *, broker: str, actions: str = "put,get,browse") -> list[str]:
    """New users ``names``, each with a token by ``manage.py api_token`` and ``actions``
    on ``broker`` by ``manage.py grant`` (every command in one process: one start of Python
    and Django instead of two a user); their tokens, in order."""
    outputs = manage_each(
        env,
        *[
            command
            for name in names
            for command in (
                ["api_token", name, "--create-user"],
                ["grant", name, "--broker", broker, "--actions", actions],
            )
        ],
    )
    return [output.strip().splitlines()[-1] for output in outputs[::2]]


@dataclass
class Platform:
    """Uvicorn + Celery worker + Celery beat against ``var_dir`` (the embedded default); or,
    with ``extra_env`` naming PostgreSQL and Redis, the scaled-out form with ``webs`` web
    server processes (each on a port of its own) and ``workers`` Celery worker processes."""

    var_dir: Path
    port: int = field(default_factory=free_port)
    servers: list[Server] = field(default_factory=list)
    token: str = ""
    username: str = "dash"
    password: str = "dash-Secret-Pw-123"
    extra_env: dict[str, str] = field(default_factory=dict)
    webs: int = 1
    workers: int = 1
    ports: list[int] = field(default_factory=list)

    @property
    def env(self) -> dict[str, str]:
        return {**base_env(self.var_dir), **self.extra_env}

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    def web_url(self, index: int) -> str:
        """The base URL of web server process ``index`` (0 is ``url``)."""
        return f"http://127.0.0.1:{self.ports[index]}"

    def client(self, web: int = 0, **kwargs) -> httpx.Client:
        headers = {"Authorization": f"Token {self.token}"}
        return httpx.Client(
            base_url=self.web_url(web) if self.ports else self.url,
            headers=headers,
            timeout=kwargs.pop("timeout", 30),
            **kwargs,
        )

    def named(self, name: str) -> list[Server]:
        return [server for server in self.servers if server.name == name or server.name.startswith(f"{name}-")]

    def logs(self) -> str:
        return "".join(server.logs() for server in self.servers)

    def _spawn(self, name: str, *args: str) -> Server:
        out, err = self.var_dir / f"{name}.out", self.var_dir / f"{name}.err"
        proc = subprocess.Popen(
            [PYTHON, *args],
            cwd=ROOT,
            env=self.env,
            stdout=out.open("wb"),
            stderr=err.open("wb"),
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        server = Server(name, proc, out, err)
        self.servers.append(server)
        return server

    def _check_alive(self) -> None:
        for server in self.servers:
            if not server.alive():
                raise AssertionError(f"{server.name} exited early with status {server.proc.returncode}\n{self.logs()}")

    def start(self, *, timeout: float = 60) -> "Platform":
        RUNNING.append(self)
        # what platform/up prepares before it starts the servers
        (self.var_dir / "celery" / "queue").mkdir(parents=True, exist_ok=True)
        (self.var_dir / "celery" / "processed").mkdir(parents=True, exist_ok=True)
        _, token, _ = manage_each(
            self.env,
            ["migrate", "--noinput", "-v0"],
            ["api_token", "tester", "--create-user", "--superuser"],
            ["createsuperuser", "--noinput", "--username", self.username, "--email", "dash@example.com"],
            extra_env={"DJANGO_SUPERUSER_PASSWORD": self.password},
        )
        lines = [line for line in token.splitlines() if line.strip()]
        assert len(lines) == 1 and len(lines[0].strip()) >= 20, f"api_token printed {lines!r}, not one token line"
        self.token = lines[0].strip()

        self.ports = [self.port] + [free_port() for _ in range(self.webs - 1)]
        for n in range(len(self.ports)):
            self.web_start(n)
        workers = [self.worker_start(n) for n in range(self.workers)]
        beat = self._spawn(
            "beat",
            "-m",
            "celery",
            "-A",
            "config",
            "beat",
            "--loglevel",
            "INFO",
            "--schedule",
            str(self.var_dir / "beat-schedule"),
        )

        def web_ready() -> bool:
            self._check_alive()
            with httpx.Client(timeout=2) as client:
                return all(
                    client.get(
                        f"http://127.0.0.1:{port}/api/brokers/", headers={"Authorization": f"Token {self.token}"}
                    ).status_code
                    == 200
                    for port in self.ports
                )

        def logged(server: Server, text: str) -> Callable[[], bool]:
            def check() -> bool:
                self._check_alive()
                return text in tail(server.stderr, 10**7)

            return check

        poll_until(
            web_ready,
            timeout=timeout,
            what=f"Uvicorn to answer GET /api/brokers/ on ports {self.ports}",
            diagnostics=self.logs,
        )
        for worker in workers:
            poll_until(
                logged(worker, "ready."),
                timeout=timeout,
                what=f"the Celery {worker.name} to log 'ready.'",
                diagnostics=self.logs,
            )
        poll_until(
            logged(beat, "beat: Starting"),
            timeout=timeout,
            what="Celery beat to log 'beat: Starting'",
            diagnostics=self.logs,
        )
        return self

    def web_start(self, n: int = 0) -> Server:
        """Web server process ``n`` (Uvicorn, the ASGI app: REST, the session, the dashboard) on its port."""
        return self._spawn(
            "uvicorn" if n == 0 else f"uvicorn-{n}",
            "-m",
            "uvicorn",
            "config.asgi:application",
            "--ws",
            WS_PROTOCOL,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.ports[n]),
            "--lifespan",
            "off",
            "--log-level",
            "warning",
            "--no-access-log",
        )

    def web_kill(self) -> None:
        """SIGKILL the first web server process (a crash of the web server; the workers and
        the database stay)."""
        old = self.named("uvicorn")[0]
        os.killpg(old.proc.pid, signal.SIGKILL)
        old.proc.wait(10)
        self.servers.remove(old)

    def web_restart(self, *, timeout: float = 60) -> None:
        """Start the first web server process again on its port, and wait until it answers."""
        self.web_start(0)

        def answers() -> bool:
            self._check_alive()
            with httpx.Client(timeout=2) as client:
                return (
                    client.get(f"{self.url}/api/brokers/", headers={"Authorization": f"Token {self.token}"}).status_code
                    == 200
                )

        poll_until(answers, timeout=timeout, what=f"Uvicorn to answer again on port {self.port}", diagnostics=self.logs)

    def worker_start(self, n: int) -> Server:
        """Celery worker process ``n`` (named ``worker<n>@<host>``; the first one's log is ``worker``)."""
        return self._spawn(
            "worker" if n == 0 else f"worker-{n}",
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "--pool",
            "threads",
            "--concurrency",
            "4",
            "--loglevel",
            "INFO",
            "-n",
            f"worker{n}@%h",
        )

    def stop(self) -> None:
        # every process told at once, so that their shutdowns overlap; then each waited for
        for server in reversed(self.servers):
            server.terminate()
        for server in reversed(self.servers):
            server.stop()
        if self in RUNNING:
            RUNNING.remove(self)


@contextmanager
def platform_started(directory: Path, **options) -> Iterator["Platform"]:
    """A platform started in ``directory`` for the length of the block (a session fixture's
    body), stopped on the way out whatever happens. ``options``: ``Platform``'s fields."""
    running = Platform(directory, **options)
    try:
        running.start()
        yield running
    finally:
        running.stop()

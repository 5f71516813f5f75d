"""config/cpu_pin.py: each web process claims a CPU no other holds and keeps its threads
there; more processes than CPUs run unpinned; a claim ends with its process."""

import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from config.cpu_pin import web_cpu_pinned
from tests.integration.servers import poll_until

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

#: A web process in miniature: pins itself as the setting says, starts a thread, says where
#: both run and which CPUs it was given, and holds its claim until its stdin closes.
PROCESS = textwrap.dedent(
    """
    import json, os, sys, threading
    from config.cpu_pin import cpus_given, web_cpu_pinned
    cpu = web_cpu_pinned(sys.argv[1])
    seen = {}
    worker = threading.Thread(target=lambda: seen.setdefault("thread", sorted(os.sched_getaffinity(0))))
    worker.start(); worker.join()
    print(json.dumps([cpu, sorted(os.sched_getaffinity(0)), seen["thread"], sorted(cpus_given())]), flush=True)
    sys.stdin.read()
    """
)

ALLOWED = sorted(os.sched_getaffinity(0))


class Process:
    def __init__(self, tmp_path, setting: str = "auto") -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", PROCESS, setting],
            cwd=ROOT,
            env={**os.environ, "TMPDIR": str(tmp_path)},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        line = self.proc.stdout.readline()
        assert line, self.proc.stderr.read()
        self.cpu, self.main_cpus, self.thread_cpus, self.given = json.loads(line)

    def end(self) -> None:
        self.proc.stdin.close()
        assert self.proc.wait(30) == 0


@pytest.mark.skipif(len(ALLOWED) < 2, reason="one CPU: auto never pins")
def test_each_process_claims_a_cpu_of_its_own_until_none_is_left(tmp_path):
    processes = [Process(tmp_path) for _ in ALLOWED]
    try:
        assert sorted(p.cpu for p in processes) == ALLOWED
        for p in processes:  # the process and the threads it starts later
            assert p.main_cpus == p.thread_cpus == [p.cpu]
            assert p.given == ALLOWED  # what a thread that should not stay there goes back to
        extra = Process(tmp_path)
        assert extra.cpu is None and extra.main_cpus == ALLOWED
        extra.end()
        freed = processes.pop(0)
        freed.end()  # its claim goes with it
        again = Process(tmp_path)
        assert again.cpu == freed.cpu and again.main_cpus == [freed.cpu]
        processes.append(again)
    finally:
        for p in processes:
            p.end()


def test_none_never_pins_and_a_number_pins_there(tmp_path):
    unpinned = Process(tmp_path, "none")
    assert unpinned.cpu is None and unpinned.main_cpus == ALLOWED
    unpinned.end()
    chosen = ALLOWED[-1]
    pinned = Process(tmp_path, str(chosen))
    assert pinned.cpu == chosen and pinned.main_cpus == pinned.thread_cpus == [chosen]
    pinned.end()


def test_a_cpu_the_process_may_not_use_is_refused():
    with pytest.raises(ValueError, match=r"BATON_WEB_CPU=4096: this process may run on CPUs"):
        web_cpu_pinned("4096")
    with pytest.raises(ValueError, match=r"BATON_WEB_CPU=fast: auto, none, or a CPU's number"):
        web_cpu_pinned("fast")


def _environ(tmp_path) -> dict[str, str]:
    return {
        **os.environ,
        "TMPDIR": str(tmp_path),
        "BATON_WEB_CPU": "auto",
        "BATON_VAR_DIR": str(tmp_path / "var"),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'baton.sqlite3'}",
    }


@pytest.mark.skipif(len(ALLOWED) < 2, reason="one CPU: auto never pins")
def test_uvicorns_command_pins_the_web_server_and_a_process_importing_the_application_stays(tmp_path):
    imported = subprocess.run(
        [sys.executable, "-c", "import os, config.asgi; print(sorted(os.sched_getaffinity(0)))"],
        cwd=ROOT,
        env=_environ(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert imported.returncode == 0, imported.stderr
    assert json.loads(imported.stdout.strip().splitlines()[-1]) == ALLOWED

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "config.asgi:application", "--host", "127.0.0.1", "--port", str(port)]
        + ["--lifespan", "off", "--log-level", "warning"],
        cwd=ROOT,
        env=_environ(tmp_path),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:

        def listening_or_gone() -> bool:
            if server.poll() is not None:
                return True
            socket.create_connection(("127.0.0.1", port), timeout=1).close()  # OSError until it listens
            return True

        poll_until(listening_or_gone, timeout=120, what="the web server to listen")
        assert server.poll() is None, server.stderr.read()
        cpus = {
            task.name: (task / "status").read_text().split("Cpus_allowed_list:")[1].split()[0]
            for task in Path(f"/proc/{server.pid}/task").iterdir()
            # the SQLite checkpointer goes back to every CPU (transactions/wal_checkpoint.py)
            if (task / "comm").read_text().strip() != "sqlite-ckpt"
        }
        assert set(cpus.values()) == {str(ALLOWED[0])}, cpus  # the first free CPU, every thread
    finally:
        server.terminate()
        server.wait(30)

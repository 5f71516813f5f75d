"""Cross-process wake-ups: a commit in this process wakes a get waiting in another, on
every bus the database allows (local sockets on SQLite; LISTEN/NOTIFY on PostgreSQL; Redis
publish/subscribe with a real Redis server), and the poll fallback still answers."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

from brokers.services.messages import message_get, message_put
from tests.conftest import bodies, database_url, msgs
from transactions import wakeup_sockets
from transactions.manager import transaction_begin, transaction_commit
from transactions.wakeup_redis import RedisBus
from transactions.wakeup_sockets import SocketBus

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[2]


class Waiter:
    """``tests.support.wakeup_waiter`` in a process of its own."""

    def __init__(self, env: dict[str, str], count: int) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.support.wakeup_waiter", "QM1", "Q1", str(count), "60"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def line(self) -> str:
        text = self.proc.stdout.readline()
        if not text:
            self.proc.wait(30)
            raise AssertionError(f"the waiter exited ({self.proc.returncode}): {self.proc.stderr.read()}")
        return text.strip()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(30)


def run_waiter(bus_setting: str, expected_bus: str, extra_env: dict[str, str] | None = None) -> None:
    env = {**os.environ, "DATABASE_URL": database_url(), "BATON_WAKEUPS": bus_setting, **(extra_env or {})}
    waiter = Waiter(env, count=3)
    try:
        assert waiter.line() == f"listening {expected_bus} {'no' if expected_bus == 'poll' else 'yes'}"
        for n in range(3):
            assert waiter.line() == f"ready {n}"
            message_put(broker="QM1", queue="Q1", messages=msgs(f"wake {n}"))
            answer = json.loads(waiter.line())
            assert answer["body"] == f"wake {n}", answer
        assert waiter.proc.wait(30) == 0, waiter.proc.stderr.read()
    finally:
        waiter.close()


def test_a_commit_here_wakes_a_get_waiting_in_another_process(queue):
    if connection.vendor == "postgresql":
        run_waiter("auto", "postgres")
    else:
        run_waiter("auto", "sockets")


def test_redis_publish_subscribe_wakes_the_other_process(queue, redis_server, settings):
    settings.BATON_WAKEUPS = "redis"
    settings.BATON_WAKEUP_REDIS_URL = redis_server.database(3)
    run_waiter("redis", "redis", {"BATON_WAKEUP_REDIS_URL": redis_server.database(3)})


@pytest.mark.parametrize("mode, outcome", [("commit", "committed"), ("check", "ready")])
def test_a_held_commit_and_a_ready_check_in_another_process_wake_when_the_upstream_commits(queue, mode, outcome):
    producer = transaction_begin(broker="QM1", timeout_ms=60_000)
    consumer = transaction_begin(broker="QM1", timeout_ms=60_000)
    message_put(broker="QM1", queue="Q1", messages=msgs("upstream"), transaction_id=producer.id)
    got = message_get(broker="QM1", queue="Q1", transaction_id=consumer.id, preemptive=True)
    assert bodies(got) == ["upstream"]
    env = {**os.environ, "DATABASE_URL": database_url()}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.transactions.held_commit_waiter", mode, consumer.id],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout.readline().strip() == "listening", proc.stderr.read()
        transaction_commit(transaction_id=producer.id)
        assert proc.stdout.readline().strip() == outcome, proc.stderr.read()
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(30)


def test_without_a_bus_waiters_poll_and_still_get_the_message(queue, settings):
    settings.BATON_WAKEUPS = "poll"
    run_waiter("poll", "poll")


def test_a_socket_that_is_not_read_gets_wake_all_next(tmp_path, settings, monkeypatch):
    """A receiver that does not read fills its buffer: the sender gives up after its timeout,
    and its next datagram to that receiver tells it to wake every waiter."""
    settings.VAR_DIR = tmp_path
    monkeypatch.setattr(wakeup_sockets, "SEND_TIMEOUT_S", 0.01)
    sender = SocketBus(scope="test")
    sender.directory.mkdir(parents=True)
    stuck = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    stuck.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    stuck.bind(str(sender.directory / "1-stuck.sock"))
    try:
        big = [f"queue:{i}" for i in range(600)]
        for _ in range(200):
            sender.publish_after_commit(big)
            if sender._missed:
                break
        assert sender._missed, "the receiver's buffer never filled"
        while True:  # drain
            stuck.setblocking(False)
            try:
                stuck.recv(1 << 17)
            except BlockingIOError:
                break
        sender.publish_after_commit(["queue:1"])
        assert stuck.recv(1 << 17) == b"* queue:1"
        assert not sender._missed
    finally:
        stuck.close()


def test_sockets_of_processes_that_are_gone_are_removed(tmp_path, settings):
    settings.VAR_DIR = tmp_path
    sender = SocketBus(scope="test")
    sender.directory.mkdir(parents=True)
    gone = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    gone.bind(str(sender.directory / "2-gone.sock"))
    gone.close()  # the file stays, nobody reads it: a process killed without clean-up
    sender.publish_after_commit(["queue:1"])
    assert not (sender.directory / "2-gone.sock").exists()


def test_a_listener_that_cannot_connect_leaves_its_waiters_polling():
    """Nothing listens on the port: the listener says it is not listening (so waiters poll)
    and keeps retrying in the background."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    bus = RedisBus(url=f"redis://127.0.0.1:{port}/0", scope="unreachable")
    try:
        bus.listen()
        assert bus._started.is_set() and not bus.listening
    finally:
        bus.stop()


def test_a_commit_sends_all_its_keys_in_one_datagram(queue):
    """The wake-ups of one database transaction go out together: a commit that makes a put
    available wakes the queue's getters and the unit of work's held commits with one
    datagram per listening process, not one per key."""
    from transactions.wakeup_bus import wakeup_bus

    bus = wakeup_bus()
    if not isinstance(bus, SocketBus):
        pytest.skip("local datagram sockets are the embedded default's bus")
    bus.directory.mkdir(parents=True, exist_ok=True)
    path = bus.directory / "1-feedfacefeedface.sock"  # another process's listener, as the sender sees it
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    listener.bind(str(path))
    listener.setblocking(False)

    def heard() -> list[set[str]]:
        datagrams = []
        while True:
            try:
                datagrams.append(set(listener.recv(1 << 17).decode().split()))
            except BlockingIOError:
                return datagrams

    try:
        put = message_put(broker="QM1", queue="Q1", messages=msgs("one"), syncpoint="yes")
        queue_id = put.queue.pk
        assert heard() == [{f"queue-put:{queue_id}"}]  # the put's own step: pre-emptive getters only
        transaction_commit(transaction_id=put.transaction_id)
        assert heard() == [{f"queue:{queue_id}", f"txn:{put.transaction_id}"}]
    finally:
        listener.close()
        path.unlink(missing_ok=True)

"""The client's durable outbox (``Client(..., outbox=PATH)``) against a real platform: its
web server stopped and started again by the test, a forwarding client process SIGKILLed
mid-flight, two clients on one file, a proxy answering 503, refusals, the size limit, the
background thread's end, and the ``baton`` command's ``--outbox``.

A client pointed at a port nobody listens on meets the same refused connection as one
whose platform is down; the tests that only need messages kept use one (no restart)."""

from __future__ import annotations

import itertools
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from baton_client import Client, NetworkError, NotFound, OutboxFull, RequestTimeout
from baton_client.outbox import _FileLock
from tests.integration.servers import free_port, poll_until

pytestmark = [pytest.mark.integration, pytest.mark.once]  # once: its servers use SQLite in either pass

ROOT = Path(__file__).resolve().parents[2]


def dead_url() -> str:
    """A platform address where nothing listens (refused, as a stopped platform's)."""
    return f"http://127.0.0.1:{free_port()}"


def drained(client: Client, broker: str, queue: str) -> list[str]:
    """Every message of the queue, got (removed) in delivery order, as text."""
    bodies: list[str] = []
    while batch := client.get(broker, queue, batch=500):
        bodies += [m.text for m in batch]
    return bodies


def forwarder_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "baton-outbox-forwarder"]


_names = itertools.count(1)


@pytest.fixture
def admin(platform):
    """A client over REST, for the tests that need one transport only."""
    with Client(platform.url, platform.token, transport="rest") as c:
        yield c


@pytest.fixture
def fresh(admin) -> str:
    """A fresh broker with queues Q1 and Q2."""
    name = f"OUTBOX{next(_names)}"
    admin.define_broker(name)
    admin.define_queue(name, "Q1")
    admin.define_queue(name, "Q2")
    return name


@pytest.fixture
def queue2(client, broker) -> str:
    """A second queue on ``broker``, defined while the platform is up (before ``web_down``)."""
    client.define_queue(broker, "Q2")
    return "Q2"


@pytest.fixture
def web_down(platform):
    """Stops the platform's web server (SIGKILL); the test calls the returned function to
    start it again (done on the way out in any case)."""
    platform.web_kill()
    state = {"up": False}

    def up() -> None:
        platform.web_restart()
        state["up"] = True

    yield up
    if not state["up"]:
        platform.web_restart()


def test_puts_while_the_platform_is_down_arrive_once_in_order_after_it_restarts(
    platform, broker, queue2, transport, tmp_path, web_down
):
    path = tmp_path / "outbox.sqlite"
    with Client(platform.url, platform.token, transport=transport, timeout=10, outbox=path) as client:
        kept = [client.put(broker, "Q1", f"m{n}", properties={"n": n}) for n in range(25)]
        kept += client.put(broker, "Q1", messages=[f"m{n}" for n in range(25, 40)])
        other = client.put(broker, "Q2", "q2 first", priority=7)
        assert all(m.queued and m.msg_id is None for m in [*kept, other])
        assert [m.text for m in kept] == [f"m{n}" for n in range(40)] and kept[0].properties == {"n": 0}
        assert client.outbox.depth == 41 and client.outbox.failed == []
        # not kept: non-persistent puts, and puts under a unit of work, raise as without an outbox
        with pytest.raises(NetworkError):
            client.put(broker, "Q1", "np", persistence="non_persistent")
        with pytest.raises(NetworkError):
            client.transaction(broker)
        assert client.outbox.depth == 41

        web_down()
        # a call the platform answers ends the back-off (the background thread, whose own
        # back-off may have ended first, may have forwarded them already: one batch); the next
        # put to the queue forwards what waits first (after the thread's round), then goes
        assert client.display_queue(broker, "Q1")["depth"] in (0, 40)
        last = client.put(broker, "Q1", "m40")
        assert not last.queued and last.msg_id
        assert client.outbox.flush(timeout=30) == 0
        assert drained(client, broker, "Q1") == [f"m{n}" for n in range(41)]
        q2 = drained(client, broker, "Q2")
        assert q2 == ["q2 first"]
        assert client.outbox.depth == 0 and client.outbox.failed == []


def test_the_background_thread_forwards_when_the_platform_is_back_and_stops_with_the_client(
    platform, admin, fresh, tmp_path, web_down
):
    before = len(forwarder_threads())
    client = Client(platform.url, platform.token, transport="rest", timeout=10, outbox=tmp_path / "o.sqlite")
    assert len(forwarder_threads()) == before + 1
    try:
        for n in range(10):
            assert client.put(fresh, "Q1", f"b{n}").queued
        web_down()
        # nothing called: the thread alone, after its back-off
        poll_until(lambda: client.outbox.depth == 0, timeout=60, what="the forwarder to empty the outbox")
        assert admin.display_queue(fresh, "Q1")["depth"] == 10
        assert drained(admin, fresh, "Q1") == [f"b{n}" for n in range(10)]
    finally:
        client.close()
    assert len(forwarder_threads()) == before
    with Client(platform.url, platform.token, outbox=tmp_path / "p.sqlite") as scoped:
        assert len(forwarder_threads()) == before + 1
        assert scoped.outbox.depth == 0
    assert len(forwarder_threads()) == before


def test_refusals_land_in_failed_and_the_queue_goes_on(platform, client, broker, transport, tmp_path):
    client.define_queue(broker, "SMALL", max_message_length=40)  # a body and the 25-character key
    path = tmp_path / "refused.sqlite"
    with Client(dead_url(), platform.token, transport=transport, outbox=path) as down:
        down.put(broker, "SMALL", "ok 1")
        down.put(broker, "SMALL", messages=["ok 2", "far too long for it", "ok 3"])
        down.put(broker, "NO.SUCH.QUEUE", "lost")
        assert down.outbox.depth == 5
    with Client(platform.url, platform.token, transport=transport, outbox=path) as up:
        assert up.outbox.flush(timeout=30) == 0
        failed = up.outbox.failed
        assert [(f.queue, f.code, f.status) for f in failed] == [
            ("SMALL", "message_too_large", 413),
            ("NO.SUCH.QUEUE", "not_found", 404),
        ]
        assert failed[0].message["body"] == "far too long for it" and failed[0].error
        assert drained(up, broker, "SMALL") == ["ok 1", "ok 2", "ok 3"]
        assert up.outbox.flush(timeout=0) == 0 and len(up.outbox.failed) == 2  # not retried
        assert up.outbox.failed_clear() == 2 and up.outbox.failed == []


def test_a_message_kept_past_its_keys_retention_is_not_forwarded(platform, admin, fresh, tmp_path):
    path = tmp_path / "old.sqlite"
    with Client(dead_url(), platform.token, outbox=path, outbox_key_retention=0.001) as down:
        down.put(fresh, "Q1", "too old")
    with Client(platform.url, platform.token, outbox=path) as up:
        assert up.outbox.flush(timeout=30) == 0
        [failed] = up.outbox.failed
        assert failed.code == "dedup_window_passed" and "second copy" in failed.error
        assert failed.message["dedup_retention_ms"] == 1
    assert admin.display_queue(fresh, "Q1")["depth"] == 0


def test_a_forward_whose_answer_was_lost_is_not_a_second_copy(platform, admin, fresh, tmp_path):
    """The state a forwarder killed between sending and recording leaves: the messages on
    the platform and still in the file. Forwarded again, they are skipped as duplicates."""
    path = tmp_path / "lost.sqlite"
    with Client(dead_url(), platform.token, outbox=path) as down:
        down.put(fresh, "Q1", messages=[f"l{n}" for n in range(30)])
    copy = tmp_path / "before-forward.sqlite"
    with sqlite3.connect(path) as source, sqlite3.connect(copy) as target:
        source.backup(target)
    with Client(platform.url, platform.token, outbox=path) as up:
        assert up.outbox.flush(timeout=30) == 0
    with Client(platform.url, platform.token, transport="rest", outbox=copy) as again:
        assert again.outbox.depth == 30
        assert again.outbox.flush(timeout=30) == 0 and again.outbox.failed == []
    assert drained(admin, fresh, "Q1") == [f"l{n}" for n in range(30)]


FORWARDER = """
import sys
from baton_client import Client
client = Client(sys.argv[1], sys.argv[2], transport="rest", outbox=sys.argv[3])
client.outbox.flush(timeout=120)
print("flushed", client.outbox.depth, flush=True)
"""


def test_sigkill_of_the_forwarding_process_mid_flight_and_a_restart_on_the_file_give_exactly_once(
    platform, admin, fresh, tmp_path
):
    path = tmp_path / "killed.sqlite"
    total = 4000
    with Client(dead_url(), platform.token, outbox=path) as down:
        for start in range(0, total, 500):
            down.put(fresh, "Q1", messages=[f"k{n:05d} " + "x" * 200 for n in range(start, start + 500)])
        assert down.outbox.depth == total
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "clients" / "python"), str(ROOT)])}
    proc = subprocess.Popen(
        [sys.executable, "-c", FORWARDER, platform.url, platform.token, str(path)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        poll_until(
            lambda: admin.display_queue(fresh, "Q1")["depth"] > 0 or proc.poll() is not None,
            timeout=60,
            what="the forwarding process to forward a first batch",
            interval=0.01,
        )
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(30)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.read()
    at_kill = admin.display_queue(fresh, "Q1")["depth"]
    assert 0 < at_kill < total, f"the kill came after {at_kill} of {total} messages: not mid-flight"
    with Client(platform.url, platform.token, outbox=path) as restarted:
        assert 0 < restarted.outbox.depth <= total - at_kill + 100  # at most the batch in flight resent
        assert restarted.outbox.flush(timeout=60) == 0 and restarted.outbox.failed == []
    bodies = drained(admin, fresh, "Q1")
    assert len(bodies) == total
    assert [b.split()[0] for b in bodies] == [f"k{n:05d}" for n in range(total)]


def test_two_clients_on_one_file_never_forward_at_once(platform, admin, fresh, tmp_path):
    path = tmp_path / "shared.sqlite"
    with Client(dead_url(), platform.token, outbox=path) as a, Client(dead_url(), platform.token, outbox=path) as b:
        for n in range(20):
            (a if n % 2 else b).put(fresh, "Q1", f"s{n:02d}")
        assert a.outbox.depth == b.outbox.depth == 20
    holder = _FileLock(str(path) + ".lock").take()  # a third forwarder has the file
    assert holder is not None
    with Client(platform.url, platform.token, outbox=path) as a, Client(platform.url, platform.token, outbox=path) as b:
        try:
            assert a.outbox.flush(timeout=0) == 20 and b.outbox.flush(timeout=0) == 20
            assert admin.display_queue(fresh, "Q1")["depth"] == 0  # nor did their threads
        finally:
            _FileLock.give(holder)
        results: list[int] = []
        flushers = [threading.Thread(target=lambda c=c: results.append(c.outbox.flush(timeout=30))) for c in (a, b)]
        for t in flushers:
            t.start()
        for t in flushers:
            t.join()
        assert results == [0, 0]
    assert drained(admin, fresh, "Q1") == [f"s{n:02d}" for n in range(20)]


class _Unavailable(BaseHTTPRequestHandler):
    """A proxy whose platform is not there: 502 to a POST (a REST put), 503 to a GET (the
    session's WebSocket handshake)."""

    def _answer(self, status: int) -> None:
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        self._answer(502)

    def do_GET(self) -> None:
        self._answer(503)

    def log_message(self, *args) -> None:
        pass


def test_a_proxy_answering_502_or_503_is_kept_an_answer_is_raised(platform, client, broker, transport, tmp_path):
    proxy = ThreadingHTTPServer(("127.0.0.1", 0), _Unavailable)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    path = tmp_path / "proxy.sqlite"
    try:
        url = f"http://127.0.0.1:{proxy.server_address[1]}"
        with Client(url, platform.token, transport=transport, outbox=path) as behind:
            assert behind.put(broker, "Q1", "via proxy").queued
            assert behind.outbox.depth == 1
    finally:
        proxy.shutdown()
        proxy.server_close()
    with Client(platform.url, platform.token, transport=transport, outbox=path) as up:
        with pytest.raises(NotFound):  # an answer: raised, not kept
            up.put(broker, "NO.SUCH.QUEUE", "x")
        assert up.outbox.flush(timeout=30) == 0
        assert up.put(broker, "Q1", "direct").msg_id
    assert drained(client, broker, "Q1") == ["via proxy", "direct"]


def test_a_put_without_an_answer_within_the_timeout_is_kept(platform, admin, fresh, tmp_path):
    """A server that takes the connection and never answers (the kernel accepts it: nobody
    reads): the put times out, is kept, and arrives once when forwarded."""
    silent = socket.create_server(("127.0.0.1", 0))
    path = tmp_path / "silent.sqlite"
    try:
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        with Client(url, platform.token, transport="rest", timeout=0.5, outbox=path) as stuck:
            kept = stuck.put(fresh, "Q1", "no answer")
            assert kept.queued and isinstance(stuck.outbox.last_error, RequestTimeout)
    finally:
        silent.close()
    with Client(platform.url, platform.token, outbox=path) as up:
        assert up.outbox.flush(timeout=30) == 0
    assert drained(admin, fresh, "Q1") == ["no answer"]


def test_the_size_limit_refuses_puts_with_a_clear_error(platform, admin, fresh, tmp_path):
    path = tmp_path / "small.sqlite"
    with Client(dead_url(), platform.token, outbox=path, outbox_max_messages=3) as down:
        for n in range(3):
            down.put(fresh, "Q1", f"f{n}")
        with pytest.raises(OutboxFull, match="is full: 3 messages") as refused:
            down.put(fresh, "Q1", "f3")
        assert refused.value.code == "outbox_full"
        assert down.outbox.depth == 3
    with Client(dead_url(), platform.token, outbox=path, outbox_max_bytes=100) as down:
        with pytest.raises(OutboxFull, match="100 bytes"):
            down.put(fresh, "Q2", "y" * 200)
    with Client(platform.url, platform.token, outbox=path) as up:
        assert up.outbox.flush(timeout=30) == 0
    assert drained(admin, fresh, "Q1") == ["f0", "f1", "f2"]


def baton(platform, *args: str) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "clients" / "python"),
        "BATON_TOKEN": platform.token,
    }
    return subprocess.run(
        [sys.executable, "-m", "baton_client.cli", *args], env=env, capture_output=True, text=True, timeout=60
    )


def test_the_baton_command_keeps_and_a_later_call_forwards(platform, admin, fresh, tmp_path):
    path = str(tmp_path / "cli.sqlite")
    down = baton(platform, "--url", dead_url(), "put", "--outbox", path, fresh, "Q1", "c1")
    assert down.returncode == 0, down.stderr
    assert down.stdout.startswith("queued ") and "kept in the outbox" in down.stderr
    baton(platform, "--url", dead_url(), "put", "--outbox", path, fresh, "Q2", "c2")
    shown = baton(platform, "--url", dead_url(), "outbox", "show", "--outbox", path)
    assert shown.returncode == 0 and '"depth": 2' in shown.stdout
    # a later put to the same queue forwards its waiting message first
    up = baton(platform, "--url", platform.url, "put", "--outbox", path, fresh, "Q1", "c3")
    assert up.returncode == 0 and not up.stdout.startswith("queued"), up.stdout + up.stderr
    flushed = baton(platform, "--url", platform.url, "outbox", "flush", "--outbox", path)
    assert flushed.returncode == 0 and flushed.stdout.strip() == "0", flushed.stdout + flushed.stderr
    assert drained(admin, fresh, "Q1") == ["c1", "c3"] and drained(admin, fresh, "Q2") == ["c2"]


def test_the_example_produces_while_the_platform_restarts(platform, admin, tmp_path):
    example = [sys.executable, str(ROOT / "examples" / "outbox_producer.py"), "--url", platform.url]
    common = ["--token", platform.token, "--outbox", str(tmp_path / "orders.outbox")]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "clients" / "python")}
    subprocess.run([*example, *common, "setup"], env=env, check=True, timeout=60)
    producer = subprocess.Popen(
        [*example, *common, "produce", "--count", "120", "--rate", "40"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        poll_until(lambda: admin.display_queue("SHOP", "ORDERS")["depth"] >= 20, timeout=60, what="the first orders")
        platform.web_kill()
        try:
            poll_until(  # its progress lines, one a second: "order N: S sent, K kept, ..."
                lambda: re.search(r"\b[1-9][0-9]* kept", producer.stdout.readline()),
                timeout=60,
                what="the producer to keep orders while the platform is down",
            )
        finally:
            platform.web_restart()
        out, err = producer.communicate(timeout=120)
    finally:
        if producer.poll() is None:
            producer.kill()
    assert producer.returncode == 0, err
    assert "0 still waiting, 0 refused" in out, out
    checked = subprocess.run(
        [*example, *common, "check", "--count", "120"], env=env, capture_output=True, text=True, timeout=60
    )
    assert checked.returncode == 0 and "all 120 orders arrived once, in order" in checked.stdout, checked.stdout

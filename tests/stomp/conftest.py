"""The STOMP server in this process (its TCP listener on a thread of its own, on the test
database), a broker and a user for it, and stomp.py connections to it."""

from __future__ import annotations

import asyncio
import threading

import pytest
import stomp

from tests.support.scratch import WS_PROTOCOL
from brokers.services.access import api_token_issue
from brokers.services.brokers import broker_define
from brokers.services.queues import queue_define
from stomp_server.tcp import stomp_serve


@pytest.fixture(autouse=True)
def _no_registry_thread(settings):
    """The dashboard's registry is written by tests explicitly (a thread of its own would
    outlive the test's database)."""
    settings.BATON_STOMP_REGISTRY = False


@pytest.fixture
def stomp_port(transactional_db):
    loop = asyncio.new_event_loop()
    started: list = []
    ready = threading.Event()

    async def main() -> None:
        future = loop.create_future()
        task = loop.create_task(stomp_serve(host="127.0.0.1", port=0, started=future))
        started.append(await future)
        started.append(task)
        ready.set()
        try:
            await task
        except asyncio.CancelledError:
            pass

    thread = threading.Thread(target=loop.run_until_complete, args=(main(),), daemon=True)
    thread.start()
    assert ready.wait(30), "the STOMP server did not start"
    yield started[0]
    loop.call_soon_threadsafe(started[1].cancel)
    thread.join(30)


@pytest.fixture
def stomp_broker(transactional_db):
    broker_define(name="QM1", transaction_timeout_ms=60_000)
    queue_define(broker="QM1", name="Q1")
    return "QM1"


@pytest.fixture
def token(transactional_db):
    return api_token_issue(username="tester", create_user=True, superuser=True)


class Listener(stomp.listener.ConnectionListener):
    """What a connection received, to wait on (bounded) in order."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.messages: list = []
        self.errors: list = []
        self.receipts: list[str] = []
        self.disconnected = False
        self.heartbeats = 0

    def on_message(self, frame) -> None:
        with self.cond:
            self.messages.append(frame)
            self.cond.notify_all()

    def on_error(self, frame) -> None:
        with self.cond:
            self.errors.append(frame)
            self.cond.notify_all()

    def on_receipt(self, frame) -> None:
        with self.cond:
            self.receipts.append(frame.headers["receipt-id"])
            self.cond.notify_all()

    def on_heartbeat(self) -> None:
        with self.cond:
            self.heartbeats += 1
            self.cond.notify_all()

    def on_disconnected(self) -> None:
        with self.cond:
            self.disconnected = True
            self.cond.notify_all()

    def wait(self, check, timeout: float = 20):
        with self.cond:
            assert self.cond.wait_for(check, timeout), "timed out waiting"

    def wait_messages(self, n: int, timeout: float = 20) -> list:
        self.wait(lambda: len(self.messages) >= n, timeout)
        return self.messages[:n]


def bye(conn) -> None:
    """DISCONNECT and wait for its receipt (stomp.py's disconnect does not): the server has
    then rolled back and given back what the connection held."""
    listener = conn.get_listener("")
    conn.disconnect()
    listener.wait(lambda: listener.disconnected)


def until(check, *, timeout: float = 20, what: str = "the server"):
    """A bounded polling loop (for what the server does after a client has gone)."""
    import time

    deadline = time.monotonic() + timeout
    while not (result := check()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)
    return result


def connected(port: int, token: str, *, version: str = "1.2", host: str | None = "QM1", **kwargs):
    cls = {"1.0": stomp.Connection10, "1.1": stomp.Connection11, "1.2": stomp.Connection12}[version]
    conn = cls([("127.0.0.1", port)], **kwargs)
    listener = Listener()
    conn.set_listener("", listener)
    headers = {"host": host} if host and version != "1.0" else ({"host": host} if host else {})
    conn.connect("tester", token, wait=True, headers=headers)
    return conn, listener


class Raw:
    """A plain socket speaking STOMP byte by byte, to see exactly what the server answers."""

    def __init__(self, port: int, *, rcvbuf: int | None = None) -> None:
        import socket

        from stomp_server.frames import FrameParser

        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.settimeout(20)
        self.sock.connect(("127.0.0.1", port))
        self.parser = FrameParser(max_frame=64 * 1024 * 1024, version="1.2")
        self.frames: list = []
        self.eof = False

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def connect(self, token: str, version: str = "1.2", **headers) -> object:
        extra = "".join(f"{k}:{v}\n" for k, v in headers.items())
        self.send(f"CONNECT\naccept-version:{version}\nhost:QM1\nlogin:tester\npasscode:{token}\n{extra}\n\0".encode())
        frame = self.next()
        assert frame.command == "CONNECTED", (frame.command, frame.headers, frame.body)
        return frame

    def next(self):
        while not self.frames:
            data = self.sock.recv(1 << 20)
            if not data:
                self.eof = True
                raise EOFError("the server closed the connection")
            self.frames.extend(self.parser.feed(data))
        return self.frames.pop(0)

    def closed_after(self):
        """The frames until the server closes the connection (bounded by the socket timeout)."""
        got = []
        try:
            while True:
                got.append(self.next())
        except (EOFError, ConnectionResetError):
            return got

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def web_port(transactional_db):
    """The ASGI application (config.asgi: HTTP, the session, STOMP at /stomp/) under uvicorn
    in this process, on the test database."""
    import socket

    import uvicorn

    from config.asgi import application

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(
            application,
            host="127.0.0.1",
            port=port,
            lifespan="off",
            log_level="warning",
            ws=WS_PROTOCOL,
            ws_max_size=64 * 1024 * 1024,
        )
    )
    server.install_signal_handlers = lambda: None
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    until(lambda: server.started, what="uvicorn")
    yield port
    server.should_exit = True
    thread.join(30)

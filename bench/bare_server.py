"""The bare servers the floors measure Baton against (``bench.session_floor``,
``bench.flow_floor``): Uvicorn, with the WebSocket protocol Baton's server runs, serving an
ASGI application that does nothing but answer request frames."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Awaitable, Callable

from tests.support.live import HOST
from tests.support.scratch import WS_PROTOCOL

ROOT = Path(__file__).resolve().parents[1]


async def frames_answered(scope, receive, send, answer: Callable[[dict], Awaitable[dict[str, Any]]]) -> None:
    """Accept a WebSocket and answer each JSON request frame with ``await answer(request)``,
    JSON encoded, until the client goes."""
    if scope["type"] != "websocket":
        return
    event = await receive()
    if event["type"] != "websocket.connect":
        return
    await send({"type": "websocket.accept"})
    while True:
        event = await receive()
        if event["type"] != "websocket.receive":
            return
        reply = await answer(json.loads(event["text"]))
        await send({"type": "websocket.send", "text": json.dumps(reply, separators=(",", ":"))})


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def bare_server_started(app: str, env: dict[str, str], *, log: Path | None = None) -> tuple[subprocess.Popen, int]:
    """Uvicorn serving ``app`` (``module:attribute``) on a free loopback port, pinned to a CPU
    as Baton's web server is (``bench.bare_uvicorn``), with ``env``
    added to this environment; returns once it listens (the process and its port). Its
    output goes to ``log``, else to this process's."""
    port = free_port()
    out = log.open("wb") if log is not None else None
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "bench.bare_uvicorn", app, "--host", HOST, "--port", str(port)]
            + ["--ws", WS_PROTOCOL, "--lifespan", "off", "--log-level", "warning", "--no-access-log"],
            cwd=ROOT,
            env={**os.environ, **env},
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT if out is not None else None,
        )
    finally:
        if out is not None:
            out.close()  # the child has its own
    deadline = time.monotonic() + 60
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"the bare server {app} exited with {proc.returncode}")
        try:
            socket.create_connection((HOST, port), timeout=1).close()
            return proc, port
        except OSError:
            if time.monotonic() > deadline:
                proc.kill()
                proc.wait()
                raise RuntimeError(f"the bare server {app} did not listen on {port} within 60 s") from None
            time.sleep(0.05)  # polling a port that is not open yet, bounded by the deadline


def bare_server_stopped(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()

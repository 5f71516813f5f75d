"""HTTP for the ASGI server: Django's WSGI handler in a pool of threads, one request per
thread, with as few crossings between the event loop and the thread as a request allows.

Why threads: under Django's ASGI handler every sync view runs in one shared thread, so a
waiting get or a held commit would stall every other request (docs/design.md §10). Here each
request has a pool thread (and that thread's persistent database connection) for as long
as it runs.

Why not a general ASGI→WSGI adapter: one that reads the body, starts the response and
sends each chunk by asking the event loop and waiting for its answer crosses between the
threads five times per request; each crossing is a wake-up of the other thread and a hand
over of the GIL. Measured here (docs/performance.md, "REST and session overhead") that cost
about 2.7 ms per request, more than Django and the operation together. Here a request
crosses twice: the event loop reads a small body (up to ``PREREAD_BYTES``) before the thread
starts, and the thread hands back the whole response when it ends. A larger body is read
from the thread as it is needed (so Django still refuses one over
``DATA_UPLOAD_MAX_MEMORY_SIZE`` before reading it), and a streaming or large response is
sent chunk by chunk as it is produced.
"""

from __future__ import annotations

import asyncio
import contextvars
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterable

#: A body up to this long (by its Content-Length) is read by the event loop before the
#: request's thread starts.
PREREAD_BYTES = 256 * 1024
#: A response body longer than this is sent as it is produced instead of all at once.
BUFFER_BYTES = 1024 * 1024


class _Body:
    """``wsgi.input``: what the event loop has read, then (for a large body) the rest,
    received from the request's thread through the loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop, receive: Callable, data: bytes, more: bool) -> None:
        self.loop, self.receive = loop, receive
        self.buffer = bytearray(data)
        self.more = more

    def _fill(self) -> None:
        message = asyncio.run_coroutine_threadsafe(self.receive(), self.loop).result()
        if message.get("type") != "http.request":  # the client went away
            self.more = False
            return
        self.buffer += message.get("body", b"")
        self.more = message.get("more_body", False)

    def read(self, size: int = -1) -> bytes:
        while self.more and (size < 0 or len(self.buffer) < size):
            self._fill()
        if size < 0 or size >= len(self.buffer):
            data = bytes(self.buffer)
            self.buffer.clear()
        else:
            data = bytes(self.buffer[:size])
            del self.buffer[:size]
        return data

    def readline(self, size: int = -1) -> bytes:
        while True:
            end = self.buffer.find(b"\n")
            if end >= 0 or not self.more or (0 <= size <= len(self.buffer)):
                break
            self._fill()
        end = len(self.buffer) if end < 0 else end + 1
        if size >= 0:
            end = min(end, size)
        data = bytes(self.buffer[:end])
        del self.buffer[:end]
        return data

    def readlines(self, hint: int = -1) -> list[bytes]:
        return list(iter(self.readline, b""))

    def __iter__(self):
        return iter(self.readline, b"")


def _environ(scope: dict[str, Any], body: _Body) -> dict[str, Any]:
    script_name = scope.get("root_path", "").encode("utf8").decode("latin1")
    path_info = scope["path"].encode("utf8").decode("latin1")
    if script_name and path_info.startswith(script_name):
        path_info = path_info[len(script_name) :]
    server = scope.get("server") or ("localhost", 80)
    environ: dict[str, Any] = {
        "REQUEST_METHOD": scope["method"],
        "SCRIPT_NAME": script_name,
        "PATH_INFO": path_info,
        "QUERY_STRING": scope["query_string"].decode("ascii"),
        "SERVER_NAME": server[0],
        "SERVER_PORT": str(server[1] or 0),
        "SERVER_PROTOCOL": f"HTTP/{scope.get('http_version', '1.1')}",
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": scope.get("scheme", "http"),
        "wsgi.input": body,
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }
    client = scope.get("client")
    if client:
        environ["REMOTE_ADDR"], environ["REMOTE_PORT"] = client[0], str(client[1])
    for raw_name, raw_value in scope.get("headers", ()):
        name = raw_name.decode("latin1")
        if name == "content-length":
            key = "CONTENT_LENGTH"
        elif name == "content-type":
            key = "CONTENT_TYPE"
        else:
            key = "HTTP_" + name.upper().replace("-", "_")
        value = raw_value.decode("latin1")
        environ[key] = f"{environ[key]},{value}" if key in environ else value
    return environ


def _content_length(scope: dict[str, Any]) -> int | None:
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


class ThreadedWSGI:
    """An ASGI application serving ``app`` (WSGI) in ``threads`` threads."""

    def __init__(self, app: Callable, *, threads: int) -> None:
        self.app = app
        self.executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="http")

    async def __call__(self, scope: dict[str, Any], receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            raise ValueError(f"ThreadedWSGI serves HTTP, not {scope['type']!r}.")
        loop = asyncio.get_running_loop()
        data, more = b"", True
        length = _content_length(scope)
        if length is not None and length <= PREREAD_BYTES:
            chunks = []
            while more:
                message = await receive()
                if message["type"] != "http.request":
                    more = False
                    break
                chunks.append(message.get("body", b""))
                more = message.get("more_body", False)
            data = b"".join(chunks)
        environ = _environ(scope, _Body(loop, receive, data, more))
        context = contextvars.copy_context()
        answer = await loop.run_in_executor(self.executor, context.run, self._respond, environ, loop, send)
        if answer is not None:  # the whole response, unsent
            status, headers, body = answer
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send({"type": "http.response.body", "body": body})

    def _respond(self, environ: dict[str, Any], loop: asyncio.AbstractEventLoop, send: Callable):
        """In the request's thread: run the application; return (status, headers, body) for
        the event loop to send, or None when the response was sent from here as it came."""
        response = _Response(loop, send)
        iterable: Iterable[bytes] = self.app(environ, response.start)
        try:
            if getattr(iterable, "streaming", False):
                response.stream()
            for chunk in iterable:
                response.write(chunk)
        finally:
            close = getattr(iterable, "close", None)
            if close is not None:
                close()  # Django's request_finished: the thread's database connection is tidied here
        return response.end()


class _Response:
    """A response in the making: held until it ends (or grows past ``BUFFER_BYTES``, or is a
    streaming one), then sent."""

    def __init__(self, loop: asyncio.AbstractEventLoop, send: Callable) -> None:
        self.loop, self.send = loop, send
        self.status = 500
        self.headers: list[tuple[bytes, bytes]] = []
        self.chunks: list[bytes] = []
        self.size = 0
        self.streaming = False

    def start(self, status: str, headers: list[tuple[str, str]], exc_info=None) -> Callable[[bytes], None]:
        if exc_info is not None and self.streaming:
            raise exc_info[1].with_traceback(exc_info[2])
        self.status = int(status.split(" ", 1)[0])
        self.headers = [(k.strip().lower().encode("latin1"), v.strip().encode("latin1")) for k, v in headers]
        return self.write

    def _send_now(self, message: dict[str, Any]) -> None:
        asyncio.run_coroutine_threadsafe(self.send(message), self.loop).result()

    def stream(self) -> None:
        """From now on, send each chunk as it comes."""
        if not self.streaming:
            self.streaming = True
            self._send_now({"type": "http.response.start", "status": self.status, "headers": self.headers})
            for chunk in self.chunks:
                self._send_now({"type": "http.response.body", "body": chunk, "more_body": True})
            self.chunks = []

    def write(self, chunk: bytes) -> None:
        if not chunk:
            return
        if not self.streaming and self.size + len(chunk) > BUFFER_BYTES:
            self.stream()
        if self.streaming:
            self._send_now({"type": "http.response.body", "body": chunk, "more_body": True})
        else:
            self.chunks.append(chunk)
            self.size += len(chunk)

    def end(self) -> tuple[int, list[tuple[bytes, bytes]], bytes] | None:
        if self.streaming:
            self._send_now({"type": "http.response.body", "body": b""})
            return None
        return self.status, self.headers, b"".join(self.chunks)

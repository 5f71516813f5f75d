"""A TCP proxy in front of a real platform that reads the WebSocket sessions passing
through it: which requests travel in sessions (and which over plain HTTP), and, on demand,
a session that drops after the platform answered a put — the reply never reaches the client
(nor do the replies batched in the same frame with it).

Frames are forwarded unchanged; the proxy only reads them (RFC 6455 framing: client frames
masked, the server's not; the session sends no compressed frames).
"""

from __future__ import annotations

import json
import socket
import threading
from dataclasses import dataclass, field
from typing import BinaryIO


@dataclass
class Seen:
    """What passed through: per session request ``(connection, op, messages in it)``, plain
    HTTP request lines, sessions opened and put replies dropped."""

    requests: list[tuple[int, str, int]] = field(default_factory=list)
    http: list[str] = field(default_factory=list)
    sessions: int = 0
    dropped: list[tuple[int, object]] = field(default_factory=list)

    def put_messages(self) -> int:
        return sum(n for _, op, n in self.requests if op == "put")


class SessionProxy:
    """Listens on a free loopback port and forwards to ``port``; ``drop_put_replies`` is how
    many put replies (the first ones) it swallows, closing their session at once."""

    def __init__(self, port: int, *, drop_put_replies: int = 0) -> None:
        self.target = ("127.0.0.1", port)
        self.drops_left = drop_put_replies
        self.seen = Seen()
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._server = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._server.getsockname()[1]}"
        threading.Thread(target=self._accept, name="session-proxy", daemon=True).start()

    def close(self) -> None:
        self._server.close()
        with self._lock:
            for sock in self._sockets:
                _closed(sock)

    def __enter__(self) -> "SessionProxy":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return  # closed
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        try:
            upstream = socket.create_connection(self.target)
        except OSError:
            _closed(client)
            return
        with self._lock:
            self._sockets += [client, upstream]
        from_client, from_server = client.makefile("rb"), upstream.makefile("rb")
        head = _http_head(from_client)
        if head is None:
            _closed(client, upstream)
            return
        if head.split(b"\r\n", 1)[0].startswith(b"GET /api/session/"):
            with self._lock:
                self.seen.sessions += 1
                number = self.seen.sessions
            upstream.sendall(head)
            answer = _http_head(from_server)
            if answer is None:
                _closed(client, upstream)
                return
            client.sendall(answer)
            puts: set = set()
            threading.Thread(
                target=self._requests, args=(number, from_client, upstream, puts, client), daemon=True
            ).start()
            self._replies(number, from_server, client, puts, upstream)
        else:
            threading.Thread(target=_pipe, args=(from_server, client), daemon=True).start()
            self._http(head, from_client, upstream)

    def _requests(
        self, number: int, source: BinaryIO, upstream: socket.socket, puts: set, client: socket.socket
    ) -> None:
        try:
            for raw, text in _frames(source):
                if text is not None:
                    decoded = json.loads(text)  # a request, or several in an array (baton.batch.v2)
                    for request in decoded if isinstance(decoded, list) else [decoded]:
                        op = request.get("op", "")
                        with self._lock:
                            self.seen.requests.append((number, op, len(request.get("messages") or [])))
                            if op == "put":
                                puts.add(request.get("id"))
                upstream.sendall(raw)
        except OSError:
            pass
        _closed(client, upstream)

    def _replies(
        self, number: int, source: BinaryIO, client: socket.socket, puts: set, upstream: socket.socket
    ) -> None:
        try:
            for raw, text in _frames(source):
                if text is not None:
                    decoded = json.loads(text)  # a reply, or several batched in an array (baton.batch)
                    answered = [r.get("re") for r in (decoded if isinstance(decoded, list) else [decoded])]
                    with self._lock:
                        put = next((re for re in answered if re in puts), None)
                        drop = put is not None and self.drops_left > 0
                        if drop:
                            self.drops_left -= 1
                            self.seen.dropped.append((number, put))
                    if drop:
                        break  # the platform answered; the client never hears it
                client.sendall(raw)
        except OSError:
            pass
        _closed(client, upstream)

    def _http(self, head: bytes, source: BinaryIO, upstream: socket.socket) -> None:
        """Plain HTTP/1.1 requests (with Content-Length bodies), one after another."""
        try:
            while head is not None:
                lines = head.decode("latin-1").split("\r\n")
                with self._lock:
                    self.seen.http.append(lines[0])
                length = next(
                    (int(line.split(":", 1)[1]) for line in lines if line.lower().startswith("content-length:")), 0
                )
                upstream.sendall(head + (source.read(length) if length else b""))
                head = _http_head(source)
        except OSError:
            pass
        _closed(upstream)


def _http_head(source: BinaryIO) -> bytes | None:
    """A request or response head, through its blank line (None at the end of the stream)."""
    lines = []
    while True:
        line = source.readline(65536)
        if not line:
            return None
        lines.append(line)
        if line in (b"\r\n", b"\n"):
            return b"".join(lines)


def _frames(source: BinaryIO):
    """Each frame as ``(its bytes, the text of a complete text message it ends or None)``."""
    parts: list[bytes] = []
    while True:
        head = _exactly(source, 2)
        fin, opcode = head[0] & 0x80, head[0] & 0x0F
        length, masked = head[1] & 0x7F, head[1] & 0x80
        extra = b""
        if length == 126:
            extra = _exactly(source, 2)
            length = int.from_bytes(extra, "big")
        elif length == 127:
            extra = _exactly(source, 8)
            length = int.from_bytes(extra, "big")
        mask = _exactly(source, 4) if masked else b""
        data = _exactly(source, length)
        payload = data
        if masked and length:
            key = int.from_bytes((mask * (length // 4 + 1))[:length], "big")
            payload = (int.from_bytes(data, "big") ^ key).to_bytes(length, "big")
        text = None
        if opcode in (0x1, 0x0) and (opcode == 0x1 or parts):
            parts.append(payload)
            if fin:
                text, parts = b"".join(parts).decode(), []
        yield head + extra + mask + data, text


def _exactly(source: BinaryIO, n: int) -> bytes:
    data = source.read(n)
    if len(data) < n:
        raise OSError("the connection ended")
    return data


def _pipe(source: BinaryIO, sink: socket.socket) -> None:
    try:
        while chunk := source.read1(65536):
            sink.sendall(chunk)
    except OSError:
        pass
    _closed(sink)


def _closed(*sockets: socket.socket) -> None:
    for sock in sockets:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        sock.close()

"""config/threaded_wsgi.py: HTTP served by a WSGI application in a pool thread, driven here
as the ASGI server drives it (no server, no database)."""

from __future__ import annotations

import asyncio
import threading

import pytest

from config.threaded_wsgi import BUFFER_BYTES, PREREAD_BYTES, ThreadedWSGI


def scope(
    *,
    method: str = "POST",
    path: str = "/api/x/",
    body_length: int | None = None,
    headers: list[tuple[bytes, bytes]] = (),
) -> dict:
    all_headers = [(b"host", b"127.0.0.1:8000"), (b"content-type", b"application/json"), *headers]
    if body_length is not None:
        all_headers.append((b"content-length", str(body_length).encode()))
    return {
        "type": "http",
        "method": method,
        "path": path,
        "root_path": "",
        "query_string": b"a=1&b=2",
        "http_version": "1.1",
        "scheme": "http",
        "server": ("127.0.0.1", 8000),
        "client": ("127.0.0.1", 5555),
        "headers": all_headers,
    }


#: What happened, in order: "receive" (a body message taken from the client), "app" (the
#: application called in its thread).
EVENTS: list[str] = []


def serve(app, scope: dict, body: bytes, *, chunk: int = 65536) -> tuple[list[dict], list[str]]:
    """Run one request through ThreadedWSGI(app); return the messages sent and the events."""
    pieces = [body[i : i + chunk] for i in range(0, len(body), chunk)] or [b""]
    sent: list[dict] = []
    EVENTS.clear()

    def application(environ, start_response):
        EVENTS.append("app")
        return app(environ, start_response)

    async def main() -> None:
        messages = [{"type": "http.request", "body": p, "more_body": i < len(pieces) - 1} for i, p in enumerate(pieces)]

        async def receive() -> dict:
            EVENTS.append("receive")
            return messages.pop(0) if messages else {"type": "http.disconnect"}

        async def send(message: dict) -> None:
            sent.append(message)

        await ThreadedWSGI(application, threads=2)(scope, receive, send)

    asyncio.run(main())
    return sent, list(EVENTS)


def response(sent: list[dict]) -> tuple[int, dict[bytes, bytes], bytes]:
    assert sent[0]["type"] == "http.response.start"
    assert all(m["type"] == "http.response.body" for m in sent[1:])
    assert not sent[-1].get("more_body", False) and all(m.get("more_body") for m in sent[1:-1])
    return sent[0]["status"], dict(sent[0]["headers"]), b"".join(m.get("body", b"") for m in sent[1:])


def echo(environ, start_response):
    """Answers with what it was given."""
    data = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
    text = (
        f"{environ['REQUEST_METHOD']} {environ['PATH_INFO']}?{environ['QUERY_STRING']} "
        f"{environ['CONTENT_TYPE']} {environ['REMOTE_ADDR']} {environ['HTTP_HOST']} {len(data)}"
    ).encode()
    start_response("201 Created", [("Content-Type", "text/plain"), ("X-Echo", "yes")])
    return [text, b"|", data[:10]]


def test_a_small_request_is_read_by_the_loop_and_answered_in_one_body():
    sent, events = serve(echo, scope(body_length=11), b'{"a":"xyz"}')
    status, headers, body = response(sent)
    assert status == 201 and headers[b"x-echo"] == b"yes" and headers[b"content-type"] == b"text/plain"
    assert body == b'POST /api/x/?a=1&b=2 application/json 127.0.0.1 127.0.0.1:8000 11|{"a":"xyz"'
    assert len(sent) == 2 and events == ["receive", "app"]


def test_a_body_in_several_messages_is_read_whole():
    data = bytes(range(256)) * 100
    sent, events = serve(echo, scope(body_length=len(data)), data, chunk=1000)
    assert response(sent)[2].endswith(b" 25600|" + data[:10])
    assert events == ["receive"] * 26 + ["app"]


def test_a_large_body_is_read_from_the_thread_as_the_application_reads_it():
    data = b"x" * (PREREAD_BYTES + 10)
    sent, events = serve(echo, scope(body_length=len(data)), data)
    assert response(sent)[2].endswith(f" {len(data)}|".encode() + b"x" * 10)
    assert events[0] == "app" and events.count("receive") == 5


def test_a_large_body_the_application_refuses_unread_is_never_read():
    def refuse(environ, start_response):
        start_response("413 Request Entity Too Large", [("Content-Type", "application/json")])
        return [b'{"code": "message_too_large"}']

    sent, events = serve(refuse, scope(body_length=PREREAD_BYTES * 4), b"y" * (PREREAD_BYTES * 4))
    assert response(sent)[:1] == (413,) and events == ["app"]


def test_a_response_larger_than_the_buffer_is_sent_as_it_is_produced():
    part = b"z" * (BUFFER_BYTES // 3 + 1)

    def big(environ, start_response):
        start_response("200 OK", [("Content-Type", "application/octet-stream")])
        return [part] * 6

    sent, _ = serve(big, scope(method="GET", body_length=0), b"")
    assert response(sent)[2] == part * 6 and len(sent) > 2


def test_a_streaming_response_is_sent_chunk_by_chunk_and_closed_in_its_thread():
    closed_in: list[str] = []

    class Streaming:
        streaming = True

        def __iter__(self):
            yield b"one,"
            yield b"two"

        def close(self):
            closed_in.append(threading.current_thread().name)

    def app(environ, start_response):
        start_response("200 OK", [("Content-Type", "text/plain")])
        return Streaming()

    sent, _ = serve(app, scope(method="GET"), b"")
    assert response(sent)[2] == b"one,two"
    assert [m.get("body") for m in sent[1:]] == [b"one,", b"two", b""]
    assert closed_in and closed_in[0].startswith("http")


def test_what_the_write_callable_writes_comes_first():
    def legacy(environ, start_response):
        write = start_response("200 OK", [("Content-Type", "text/plain")])
        write(b"written,")
        return [b"returned"]

    sent, _ = serve(legacy, scope(method="GET"), b"")
    assert response(sent)[2] == b"written,returned"


def test_only_http_is_served():
    with pytest.raises(ValueError):
        asyncio.run(ThreadedWSGI(echo, threads=1)({"type": "websocket"}, None, None))

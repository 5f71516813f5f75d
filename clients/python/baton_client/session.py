"""A Baton session: one WebSocket to ``/api/session/`` carrying any number of operations,
pipelined (see "Sessions: the fast path" in the API contract).

A request is ``{"id", "op", ...fields}``; its reply ``{"re": id, "status", ...body}`` may
come in any order. :meth:`Session.send` sends a request and returns a
:class:`~concurrent.futures.Future` of its reply at once; :meth:`Session.call` sends and
waits. Many threads may share one session: sends are serialised (so requests are applied
in the order sent), one reader thread hands each reply to its future.

A session that drops (the server restarted, the network broke) fails the replies still
awaited with :class:`NetworkError`; the next request opens a new one. Units of work are
independent of sessions, so they carry on.
"""

from __future__ import annotations

import itertools
import json
import threading
from concurrent.futures import Future, TimeoutError as FutureTimeout
from typing import Any, Mapping
from urllib.parse import urlsplit, urlunsplit

from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI
from websockets.sync.client import ClientConnection, connect

from .errors import NetworkError, RequestTimeout, error_from_body

__all__ = ["Session", "session_url", "reply_body"]

PATH = "/api/session/"
#: The subprotocol asked for: the server may send several replies in one frame, as a JSON
#: array (a server that does not know it sends one reply a frame).
BATCHED = "baton.batch"
#: ``baton.batch``, and requests may go several in one frame, as a JSON array (asked first;
#: a server that does not know it chooses ``baton.batch``, and gets one request a frame).
BATCHED_V2 = "baton.batch.v2"
#: The largest reply frame read (a batch of big messages); the server applies its own limit to requests.
MAX_FRAME_BYTES = 256 * 1024 * 1024


def session_url(base_url: str) -> str:
    """``http://host:port`` (the REST base URL) → ``ws://host:port/api/session/``."""
    parts = urlsplit(base_url)
    scheme = {"http": "ws", "https": "wss"}.get(parts.scheme, parts.scheme)
    return urlunsplit((scheme, parts.netloc, parts.path.rstrip("/") + PATH, "", ""))


def reply_body(op: str, reply: Mapping[str, Any]) -> dict[str, Any]:
    """The REST body a reply carries; raises the error it reports (the same class, code,
    status and details as REST)."""
    status = reply.get("status")
    body = {k: v for k, v in reply.items() if k not in ("re", "status")}
    if not isinstance(status, int) or status >= 400:
        raise error_from_body(status if isinstance(status, int) else None, body, text=f"{op}: {reply!r}")
    return body


class Session:
    """One WebSocket session, opened on first use and again after a drop.

    ``timeout`` is for a reply; a request that waits on the server (``wait`` seconds) gets
    its wait added. ``headers`` go on the upgrade request (the token as
    ``Authorization: Token <key>``)."""

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        *,
        timeout: float = 30.0,
        open_timeout: float = 10.0,
        user_agent: str = "baton-client",
    ) -> None:
        self.url = session_url(base_url)
        self.timeout = timeout
        self.open_timeout = open_timeout
        self._headers = {"Authorization": f"Token {token}"} if token else {}
        self._user_agent = user_agent
        self._ids = itertools.count(1)
        self._lock = threading.Lock()  # the connection, sends and the table of awaited replies
        self._ws: ClientConnection | None = None
        self._awaited: dict[int, Future] = {}
        self._sent_on: dict[int, ClientConnection] = {}  # the connection each awaited request went on
        self._closed = False
        #: Deferrable requests sent and not answered yet (their ids), and those held back
        #: meanwhile: ``(id, frame text, future, deferrable)``. See :meth:`send`.
        self._deferred_out: set[int] = set()
        self._held: list[tuple[int, str, Future, bool]] = []

    def __repr__(self) -> str:
        return f"Session({self.url!r}, open={self._ws is not None})"

    # -- the connection -----------------------------------------------------------------
    def _open(self) -> ClientConnection:
        """The open connection (opening one, with its reader thread, if there is none). Under the lock."""
        if self._closed:
            raise NetworkError(f"{self.url}: the session was closed.")
        if self._ws is None:
            try:
                ws = connect(
                    self.url,
                    additional_headers=self._headers,
                    user_agent_header=self._user_agent,
                    compression=None,
                    subprotocols=[BATCHED_V2, BATCHED],  # several replies (and requests) in one frame, as a JSON array
                    proxy=None,
                    open_timeout=self.open_timeout,
                    max_size=MAX_FRAME_BYTES,
                    max_queue=None,
                    ping_interval=20,
                    ping_timeout=None,
                ).__enter__()  # the connection itself, closed by _dropped (websockets' context-manager form)
            except (OSError, TimeoutError, InvalidHandshake, InvalidURI, ConnectionClosed) as exc:
                # ConnectionClosed: the server went away in the middle of the opening handshake
                raise NetworkError(f"{self.url}: cannot open a session ({exc}).") from exc
            self._ws = ws
            threading.Thread(target=self._read, args=(ws,), name="baton-session-reader", daemon=True).start()
        return self._ws

    def _read(self, ws: ClientConnection) -> None:
        """The reader thread: every reply to its future, until the connection ends."""
        try:
            while True:
                self._replied(ws, ws.recv())
        except ConnectionClosed:
            pass
        except Exception:  # noqa: BLE001 - whatever broke the connection, the awaited replies fail below
            pass
        finally:
            self._dropped(ws)

    def _replied(self, ws: ClientConnection, frame: str | bytes) -> None:
        """A frame read: each reply in it to its future; once the deferrable requests sent
        are all answered, those held back behind them go."""
        try:
            replies = json.loads(frame)
        except ValueError:
            return
        answered: list[int] = []  # deferrable requests answered
        for reply in replies if isinstance(replies, list) else (replies,):
            try:
                frame_id = reply["re"]
                future = self._awaited.pop(frame_id, None)
                self._sent_on.pop(frame_id, None)
            except (TypeError, KeyError):
                continue  # not a reply to a request of ours (the server answers bad frames with re: null)
            if frame_id in self._deferred_out:
                answered.append(frame_id)
            if future is not None and not future.done():
                future.set_result(reply)
        if answered:
            with self._lock:
                self._deferred_out.difference_update(answered)
                if not self._deferred_out and self._held and self._ws is ws:
                    self._send_held(ws)

    def _dropped(self, ws: ClientConnection) -> None:
        with self._lock:
            if self._ws is ws:
                self._ws = None
            # only what went on this connection: a new one may already carry other requests
            # (a send that found it broken let the next call open another before its reader
            # got here)
            ids = [frame_id for frame_id, on in list(self._sent_on.items()) if on is ws]  # other readers pop
            awaited = {frame_id: self._awaited.pop(frame_id, None) for frame_id in ids}
            for frame_id in ids:
                self._sent_on.pop(frame_id, None)
                self._deferred_out.discard(frame_id)
            if self._held:  # held back behind requests that went on it: never sent
                gone = set(ids)
                self._held = [held for held in self._held if held[0] not in gone]
        error = NetworkError(f"{self.url}: the session closed before the reply came.")
        for future in awaited.values():
            if future is not None and not future.done():
                future.set_exception(error)
        try:
            ws.close()
        except Exception:  # noqa: BLE001 - already gone
            pass

    def open(self) -> None:
        """Open the session now, rather than with the first request."""
        with self._lock:
            self._open()

    def close(self) -> None:
        """Close the session (replies still awaited fail with NetworkError)."""
        with self._lock:
            self._closed = True
            ws, self._ws = self._ws, None
        if ws is not None:
            ws.close()
            self._dropped(ws)

    # -- requests -----------------------------------------------------------------------
    def send(self, op: str, fields: Mapping[str, Any], *, defer: bool = False) -> Future:
        """Send one request without waiting; the future's result is the raw reply.

        ``defer``: the request may be held back while an earlier deferrable request of this
        session is unanswered, and then sent with the others held meanwhile in one frame
        (a JSON array, to a server that chose ``baton.batch.v2``) when the last of those
        replies comes, before any request that is not deferrable, or when its reply is
        waited for (:meth:`result`). A pipelined put under a unit of work is one: nothing
        waits for it, and puts that come while the server is busy go as one step (Nagle's
        rule, for requests)."""
        future: Future = Future()
        with self._lock:
            ws = self._open()
            frame_id = next(self._ids)
            text = json.dumps({"id": frame_id, "op": op, **fields}, separators=(",", ":"))
            self._awaited[frame_id] = future
            self._sent_on[frame_id] = ws
            if defer:
                if self._deferred_out:
                    self._held.append((frame_id, text, future, True))
                    return future
                self._deferred_out.add(frame_id)
            if self._held:  # those held back go first, in the same frame
                self._held.append((frame_id, text, future, defer))
                self._send_held(ws)
            else:
                self._send_frame(ws, text, [(frame_id, op, future)])
        return future

    def _send_held(self, ws: ClientConnection) -> None:
        """Send the requests held back (under the lock), in one frame when the server takes
        arrays; each deferrable one is then awaited as sent."""
        held, self._held = self._held, []
        self._deferred_out.update(frame_id for frame_id, _, _, deferrable in held if deferrable)
        if len(held) == 1 or ws.subprotocol != BATCHED_V2:
            for frame_id, text, future, _ in held:
                self._send_frame(ws, text, [(frame_id, "request", future)])
            return
        text = f"[{','.join(text for _, text, _, _ in held)}]"
        self._send_frame(ws, text, [(frame_id, "request", future) for frame_id, _, future, _ in held])

    def _send_frame(self, ws: ClientConnection, text: str, requests: list[tuple[int, str, Future]]) -> None:
        """Send one frame (under the lock); if the connection broke, fail its requests."""
        try:
            ws.send(text)
        except (ConnectionClosed, OSError) as exc:
            if self._ws is ws:
                self._ws = None
            for frame_id, op, future in requests:
                self._awaited.pop(frame_id, None)
                self._sent_on.pop(frame_id, None)
                self._deferred_out.discard(frame_id)
                if not future.done():
                    future.set_exception(NetworkError(f"{self.url}: {op}: the session broke ({exc})."))

    def flush(self) -> None:
        """Send the requests held back now (see :meth:`send`)."""
        with self._lock:
            if self._held and self._ws is not None:
                self._send_held(self._ws)

    def result(self, op: str, future: Future, *, wait: float = 0) -> dict[str, Any]:
        """Wait for a sent request's reply: its body, or the error it reports raised."""
        timeout = self.timeout + (wait or 0)
        if self._held and not future.done():
            self.flush()  # it may be one held back
        try:
            reply = future.result(timeout)
        except FutureTimeout:
            raise RequestTimeout(f"{op}: no reply within {timeout:g}s.") from None
        return reply_body(op, reply)

    def call(self, op: str, fields: Mapping[str, Any], *, wait: float = 0) -> dict[str, Any]:
        """Send one request and wait for its reply's body (or raise the error it reports)."""
        return self.result(op, self.send(op, fields), wait=wait)

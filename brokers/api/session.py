"""The session: ``/api/session/`` upgraded to a WebSocket carries any number of operations,
pipelined (docs/api.md, "Sessions: the fast path").

One frame is one request ``{"id", "op", ...fields}``; its reply is ``{"re": id, "status",
...body}`` with the status, code and message REST would answer, because both run the same
operation (``brokers.api.operations``: the same input definition, permission checks and
service). How it is served:

- The event loop only receives and sends. Each session has one thread of its own that
  applies its requests in the order sent, one after another (so no per-request thread hop
  through a shared executor, and no ORM work beyond the operation's own).
- A request that would wait (a get that found nothing, a commit that is held, a check that
  is pending, each with ``wait`` > 0) is tried at once in order; if it must wait, the wait
  moves to a shared pool of waiter threads, so it holds up neither the session's later
  requests nor other sessions. Replies may therefore come in any order.
- Bounds: a frame longer than ``BATON_MAX_REQUEST_LENGTH`` is answered 413
  ``message_too_large`` unread; more than ``BATON_SESSION_MAX_PENDING`` requests not yet
  applied are answered 429 ``throttled``; more than ``BATON_SESSION_MAX_WAITS`` waiting
  requests likewise, as are more than ``BATON_MAX_WAITS_PER_USER`` waiting requests of one
  user across all sessions and REST (``brokers/api/waits.py``). A client that stops reading its replies until more than
  ``BATON_SESSION_SEND_BUFFER`` bytes are queued, or for longer than
  ``BATON_SESSION_SEND_TIMEOUT_S``, is disconnected (close code 1008): it never holds up
  anyone else.
- Closing a session leaves its units of work as they are.
"""

from __future__ import annotations

import asyncio
import json
import math
import logging
import queue
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from channels.consumer import get_handler_name
from channels.exceptions import StopConsumer
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.db import close_old_connections, connections

from config import errors
from config.errors import BatonError, InvalidInput, MessageTooLarge

from .authentication import token_user
from .operations import SESSION_OPERATIONS
from .parsers import json_storable, json_strict_loads
from .waits import WOULD_WAIT as _WOULD_WAIT, wait_slot_give, wait_slot_take

log = logging.getLogger(__name__)

_WAITERS: ThreadPoolExecutor | None = None
_WAITERS_LOCK = threading.Lock()


def _waiters() -> ThreadPoolExecutor:
    global _WAITERS
    with _WAITERS_LOCK:
        if _WAITERS is None:
            _WAITERS = ThreadPoolExecutor(settings.BATON_SESSION_WAIT_THREADS, thread_name_prefix="session-wait")
        return _WAITERS


def _error(re: Any, exc: BatonError) -> dict[str, Any]:
    return {"re": re, "status": exc.status, **exc.as_dict()}


class NotAuthenticated(errors.NotAuthenticated):
    """Authenticate first: send Authorization: Token <key> with the upgrade, or a first frame
    {"op": "auth", "token": "<key>"}."""


class Throttled(errors.Throttled):
    """Too many requests in flight on this session; wait for replies before sending more."""


class _Applier(threading.Thread):
    """The session's own thread: applies its requests in the order sent."""

    def __init__(self, consumer: SessionConsumer) -> None:
        super().__init__(name="session", daemon=True)
        self.consumer = consumer
        self.inbox: queue.SimpleQueue = queue.SimpleQueue()
        self.pending = 0  # requests received, not yet applied (read by the event loop)
        self.waiting = 0  # requests handed to the waiter pool, not yet answered
        self.lock = threading.Lock()

    def run(self) -> None:
        try:
            while (frame := self.inbox.get()) is not None:
                try:
                    self.apply(frame)
                finally:
                    with self.lock:
                        self.pending -= 1
        finally:
            connections.close_all()

    # --- one request ----------------------------------------------------------------------

    def apply(self, text: str) -> None:
        re = None
        try:
            try:
                request = json_strict_loads(text)
            except (ValueError, RecursionError):  # not JSON, or nested beyond the decoder's depth
                raise InvalidInput(
                    'A request is one JSON object: {"id", "op", ...fields}.', errors={"body": ["Not JSON."]}
                ) from None
            if not isinstance(request, dict):
                raise InvalidInput(
                    'A request is one JSON object: {"id", "op", ...fields}.', errors={"body": ["Must be an object."]}
                )
            re = request.pop("id", None)
            if (
                isinstance(re, bool)
                or not isinstance(re, (int, float, str))
                or (isinstance(re, str) and len(re) > 200)
                or (isinstance(re, float) and not math.isfinite(re))
            ):  # 1e400 decodes as infinity: not JSON
                re = None
                raise InvalidInput(
                    "A request needs an id: a number or a string of at most 200 characters.",
                    errors={"id": ["Required: a number or a string."]},
                )
            op = request.pop("op", None)
            if op == "auth":
                self.authenticate(re, request)
                return
            operation = SESSION_OPERATIONS.get(op) if isinstance(op, str) else None
            if operation is None:
                known = ", ".join(sorted(["auth", *SESSION_OPERATIONS]))
                raise InvalidInput(
                    f"Unknown operation {op!r}; the operations are {known}.",
                    errors={"op": ["Unknown operation." if op is not None else "Required."]},
                )
            user = self.consumer.user
            if user is None:
                raise NotAuthenticated()
            json_storable(request)  # text no database stores, numbers that are not finite
            operation.permitted_first(user, request)
            data = operation.parse(request)
            wait = getattr(data, "wait", 0) or 0
            if op in _WOULD_WAIT and wait > 0:
                data.wait = 0
                status, body = operation.perform(user, data)
                if _WOULD_WAIT[op](status, body):
                    data.wait = wait
                    self.wait(re, operation, user, data)
                    return
            else:
                status, body = operation.perform(user, data)
            self.consumer.reply({"re": re, "status": status, **operation.checked(status, body)})
        except BatonError as exc:
            self.consumer.reply(_error(re, exc))
        except Exception:  # a bug: answer it as REST would, keep the session
            log.exception("session request failed")
            close_old_connections()
            self.consumer.reply(
                {"re": re, "status": 500, "code": "server_error", "message": "The server failed to handle the request."}
            )

    def authenticate(self, re: Any, request: dict[str, Any]) -> None:
        key = request.get("token")
        user = token_user(key) if isinstance(key, str) and len(key) <= 200 else None
        if user is None:
            raise NotAuthenticated("Invalid token.")
        self.consumer.user = user
        self.consumer.reply({"re": re, "status": 200, "user": user.get_username()})

    def wait(self, re: Any, operation, user, data) -> None:
        with self.lock:
            if self.waiting >= settings.BATON_SESSION_MAX_WAITS:
                raise Throttled(
                    f"At most {settings.BATON_SESSION_MAX_WAITS} waiting requests per session.", retry_after=1
                )
            slot = wait_slot_take(user)  # the user's, across sessions and REST (brokers/api/waits.py)
            self.waiting += 1

        def waited() -> None:
            try:
                status, body = operation.perform(user, data)
                answer = {"re": re, "status": status, **operation.checked(status, body)}
            except BatonError as exc:
                answer = _error(re, exc)
            except Exception:
                log.exception("session request failed")
                close_old_connections()
                answer = {
                    "re": re,
                    "status": 500,
                    "code": "server_error",
                    "message": "The server failed to handle the request.",
                }
            finally:  # the slot is free before the client hears the answer
                wait_slot_give(slot)
                with self.lock:
                    self.waiting -= 1
            self.consumer.reply(answer)

        _waiters().submit(waited)


class SessionConsumer(AsyncWebsocketConsumer):
    """``/api/session/``: receives frames, hands them to the session's thread, sends replies."""

    user = None

    async def __call__(self, scope: dict[str, Any], receive, send) -> None:
        """Channels' consumer loop without what a session does not use, each of which cost
        every frame something (docs/performance.md, "REST and session overhead"): a channel
        layer (a session joins no group; with Redis every consumer would poll its own
        channel), a task per frame to wait on it, and Channels' tidying of database
        connections before each frame, a hop into the shared sync thread (this event loop
        touches no database; the session's thread keeps its own connection)."""
        self.scope = scope
        self.base_send = send
        self.channel_layer = None
        try:
            while True:
                message = await receive()
                handler = getattr(self, get_handler_name(message), None)
                if handler is None:
                    raise ValueError(f"No handler for message type {message['type']}")
                await handler(message)
        except StopConsumer:
            pass

    async def connect(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.unsent = 0  # bytes of replies queued, not yet sent
        self.closing = False
        # replies made by the session's threads, waiting for the event loop to take them
        self.made: list[str] = []
        self.made_lock = threading.Lock()
        self.outbox: asyncio.Queue[str] = asyncio.Queue()
        key = _header_token(self.scope)
        if key is not None:
            self.user = await asyncio.to_thread(_authenticated, key)  # once per session
        self.applier = _Applier(self)
        self.applier.start()
        await self.accept()
        self.writer = self.loop.create_task(self._write())

    async def disconnect(self, code: int) -> None:
        self.closing = True
        self.applier.inbox.put(None)
        writer = getattr(self, "writer", None)
        if writer is not None:
            writer.cancel()

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if text_data is None:
            await self._send_now(
                _error(None, InvalidInput("Send requests as JSON text frames.", errors={"body": ["A binary frame."]}))
            )
            return
        if len(text_data) > settings.BATON_MAX_REQUEST_LENGTH:
            await self._send_now(
                _error(
                    None,
                    MessageTooLarge(
                        f"A request frame may hold at most {settings.BATON_MAX_REQUEST_LENGTH} characters.",
                        max_request_length=settings.BATON_MAX_REQUEST_LENGTH,
                        length=len(text_data),
                    ),
                )
            )
            return
        applier = self.applier
        with applier.lock:
            full = applier.pending >= settings.BATON_SESSION_MAX_PENDING
            if not full:
                applier.pending += 1
        if full:
            await self._send_now(_error(_peek_id(text_data), Throttled()))
            return
        applier.inbox.put(text_data)

    # --- replies (from any thread) --------------------------------------------------------

    def reply(self, body: dict[str, Any]) -> None:
        """Encode a reply (once) and hand it to the event loop. Replies made while the loop
        has not yet taken the earlier ones go with them: one wake-up of the loop for all."""
        text = json.dumps(body, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        with self.made_lock:
            self.made.append(text)
            if len(self.made) > 1:
                return  # the loop is already asked to take them
        self.loop.call_soon_threadsafe(self._take_made)

    def _take_made(self) -> None:
        with self.made_lock:
            made, self.made = self.made, []
        for text in made:
            self._queue_send(text)

    def _queue_send(self, text: str) -> None:
        if self.closing:
            return
        self.unsent += len(text)
        if self.unsent > settings.BATON_SESSION_SEND_BUFFER:
            self._give_up("replies are not being read")
            return
        self.outbox.put_nowait(text)

    async def _write(self) -> None:
        """The session's one sender: replies in the order they were made, each within
        ``BATON_SESSION_SEND_TIMEOUT_S``."""
        while True:
            text = await self.outbox.get()
            try:
                async with asyncio.timeout(settings.BATON_SESSION_SEND_TIMEOUT_S):
                    await self.send(text_data=text)
            except (TimeoutError, OSError, RuntimeError):
                self._give_up("a reply could not be sent in time")
                return
            finally:
                self.unsent -= len(text)

    async def _send_now(self, body: dict[str, Any]) -> None:
        self._queue_send(json.dumps(body, separators=(",", ":"), ensure_ascii=False))

    def _give_up(self, why: str) -> None:
        if not self.closing:
            self.closing = True
            log.warning("closing a session: %s", why)
            self.loop.create_task(self.close(code=1008))


def _header_token(scope: dict[str, Any]) -> str | None:
    for name, value in scope.get("headers", []):
        if name == b"authorization":
            kind, _, key = value.decode("latin-1").partition(" ")
            if kind.lower() == "token" and key.strip():
                return key.strip()
    return None


def _authenticated(key: str):
    try:
        return token_user(key)
    finally:
        connections.close_all()


def _peek_id(text: str) -> Any:
    """The id of a request refused unread (throttled): only when it is cheap to find."""
    if len(text) > 65536:
        return None
    try:
        found = json_strict_loads(text).get("id")
    except (ValueError, AttributeError, RecursionError):
        return None
    if isinstance(found, float) and not math.isfinite(found):
        return None
    return found if isinstance(found, (int, float, str)) and not isinstance(found, bool) else None

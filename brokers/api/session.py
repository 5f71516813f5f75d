"""The session: ``/api/session/`` upgraded to a WebSocket carries any number of operations,
pipelined (docs/api.md, "Sessions: the fast path").

One frame is one request ``{"id", "op", ...fields}``; its reply is ``{"re": id, "status",
...body}`` with the status, code and message REST would answer, because both run the same
operation (``brokers.api.operations``: the same input definition, permission checks and
service). How it is served:

- The event loop only receives and sends. Each session's pump (``brokers/api/pump.py``, the
  same as a STOMP connection's) has a thread of the session pool (at most
  ``BATON_SESSION_THREADS`` per process) apply its requests in the order sent, one after
  another, while it has any; a session waiting for requests holds no thread.
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
import collections
import json
import math
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
import types
from typing import Any, NamedTuple

import orjson
from channels.consumer import get_handler_name
from channels.exceptions import StopConsumer
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.db import close_old_connections

from baton_client import errors
from baton_client.errors import BatonError, InvalidInput, MessageTooLarge
from transactions.wakeups import Begun, wait_begun, wait_dropped, wait_resumed

from .authentication import token_user
from .operations import SESSION_OPERATIONS
from .pump import NOTHING, Pool, Pump
from .parsers import json_request_loads, json_storable, json_strict_loads
from .waits import LOOKS_ONCE as _LOOKS_ONCE, WOULD_WAIT as _WOULD_WAIT, wait_slot_give, wait_slot_take

log = logging.getLogger(__name__)

_WAITERS: ThreadPoolExecutor | None = None
_WAITERS_LOCK = threading.Lock()


def _waiters() -> ThreadPoolExecutor:
    global _WAITERS
    with _WAITERS_LOCK:
        if _WAITERS is None:
            _WAITERS = ThreadPoolExecutor(settings.BATON_SESSION_WAIT_THREADS, thread_name_prefix="session-wait")
        return _WAITERS


_POOL: Pool | None = None


def session_pool() -> Pool:
    """The threads that apply the requests of this process's sessions (at most
    ``BATON_SESSION_THREADS``; a session holds none while it waits for requests)."""
    global _POOL
    with _WAITERS_LOCK:
        if _POOL is None:
            _POOL = Pool("session", lambda: settings.BATON_SESSION_THREADS)
        return _POOL


def _error(re: Any, exc: BatonError) -> dict[str, Any]:
    return {"re": re, "status": exc.status, **exc.as_dict()}


def _server_error(re: Any) -> dict[str, Any]:  # a bug: answered as REST would
    return {"re": re, "status": 500, "code": "server_error", "message": "The server failed to handle the request."}


class NotAuthenticated(errors.NotAuthenticated):
    """Authenticate first: send Authorization: Token <key> with the upgrade, or a first frame
    {"op": "auth", "token": "<key>"}."""


class Throttled(errors.Throttled):
    """Too many requests in flight on this session; wait for replies before sending more."""


class _Request(NamedTuple):
    """A request read and validated, waiting to be applied."""

    re: Any
    operation: Any  # None: auth
    user: Any
    data: Any  # the operation's input; auth: the request's fields
    key: Any  # ``Operation.together``


class _Frames(NamedTuple):
    """An array frame (``baton.batch.v2``): several requests, read by the session's thread."""

    text: str


def _not_a_request(why: str) -> InvalidInput:
    return InvalidInput('A request is one JSON object: {"id", "op", ...fields}.', errors={"body": [why]})


def _decoded(text: str) -> tuple[Any, bool] | dict[str, Any]:
    """A frame's JSON and whether it is known storable (``json_request_loads``), or the
    error reply to a frame that is not JSON."""
    try:
        return json_request_loads(text)
    except InvalidInput as exc:  # a key given twice (parsers.DuplicateKey): named in the reply
        return _error(None, exc)
    except (ValueError, RecursionError):  # not JSON, or nested beyond the decoder's depth
        return _error(None, _not_a_request("Not JSON."))
    except Exception:  # a bug: answer it as REST would, keep the session
        log.exception("session request failed")
        return _server_error(None)


class _Applier:
    """The session's side of its pump (``brokers/api/pump.py``): applies its requests in the
    order sent, on a thread of the session pool, holding none while it waits for more."""

    def __init__(self, consumer: SessionConsumer, *, header_token: str | None = None) -> None:
        self.consumer = consumer
        #: The upgrade's token, read on the pool before the session is accepted:
        #: ``authenticated`` gets its user (None: not a user's token).
        self.header_token = header_token
        self.authenticated: asyncio.Future | None = None
        if header_token is not None:
            self.loop = asyncio.get_running_loop()
            self.authenticated = self.loop.create_future()
        self.pump: Pump | None = None  # set by whoever made the pump
        #: The rest of an array frame's requests (decoded, with whether they are storable),
        #: read one at a time as they come to be applied.
        self.ready: collections.deque[tuple[Any, bool]] = collections.deque()
        self.waiting = 0  # requests handed to the waiter pool, not yet answered
        self.lock = threading.Lock()
        #: Set once the session's last item was applied.
        self.finished = threading.Event()

    @property
    def hold(self) -> bool:
        """More requests are in hand: replies are held back until there are none."""
        return self.pump.hold

    def applied(self, item: Any) -> tuple[int, Any]:
        """Apply ``item`` (a frame's text, or an array frame's) and what goes together with
        it, then the rest of an array frame's requests; how many requests were applied."""
        count = 0
        while True:
            if item is NOTHING:
                if not self.ready:
                    return count, NOTHING
                item = self.read_request(*self.ready.popleft())
            elif type(item) is _Frames:
                item = self.read_many(item.text)
            elif type(item) is str:
                item = self.read(item)
            group = [item]
            ahead: Any = NOTHING
            if isinstance(item, _Request) and item.key is not None:
                ahead = self.gather(group)
            self.pump.hold = ahead is not NOTHING or self.more()
            try:
                self.apply(group)
            finally:
                count += len(group)
            item = ahead

    def end(self) -> None:
        self.finished.set()

    def more(self) -> bool:
        """Whether more requests are in hand (in an array frame read, or received)."""
        return bool(self.ready) or self.pump.more()

    def take_nowait(self) -> Any:
        """The next request in hand, read (or the error reply to it), or ``NOTHING``. The
        requests of an array frame are read one at a time, as they come to be applied, so
        that each is read as the user the session then has (after an ``auth`` before it)."""
        if self.ready:
            return self.read_request(*self.ready.popleft())
        frame = self.pump.take_nowait()
        if frame is NOTHING:
            return NOTHING
        if type(frame) is _Frames:
            return self.read_many(frame.text)
        return self.read(frame)

    def header_authenticated(self) -> None:
        """Read the upgrade's token on the pool (its database connection serves the session's
        requests), before the session is accepted."""
        future = self.authenticated
        try:
            user = token_user(self.header_token)
        except BaseException as exc:
            self.loop.call_soon_threadsafe(_settled, future, None, exc)
            return
        self.loop.call_soon_threadsafe(_settled, future, user, None)

    def gather(self, group: list[_Request]) -> Any:
        """Add to ``group`` the requests already waiting that go together with its first
        (``Operation.together``), up to ``BATON_MAX_BATCH``; return the first that does not
        (read, to be applied next), or ``NOTHING``."""
        first = group[0]
        while len(group) < settings.BATON_MAX_BATCH:
            item = self.take_nowait()
            if item is NOTHING:
                return NOTHING
            if not isinstance(item, _Request) or item.key != first.key or item.operation is not first.operation:
                return item
            group.append(item)
        return NOTHING

    # --- requests -------------------------------------------------------------------------

    def read(self, text: str) -> _Request | dict[str, Any]:
        """A request read, validated and checked as far as can be before it is applied (the
        user it runs as is the session's now: an ``auth`` is applied in order, and ends a
        group); or the error reply to it."""
        decoded = _decoded(text)
        return decoded if type(decoded) is dict else self.read_request(*decoded)

    def read_many(self, text: str) -> _Request | dict[str, Any]:
        """The first request of an array frame (``baton.batch.v2``), read; the rest wait in
        ``ready``, each counted as pending from now. An array that is not JSON, is empty or
        holds more requests than a session may have pending is answered once, unread."""
        decoded = _decoded(text)
        if type(decoded) is dict:
            return decoded
        requests, storable = decoded
        if not requests or len(requests) > settings.BATON_SESSION_MAX_PENDING:
            return _error(
                None,
                InvalidInput(
                    f"An array frame holds 1 to {settings.BATON_SESSION_MAX_PENDING} requests.",
                    errors={"body": [f"{len(requests)} requests."]},
                ),
            )
        self.pump.counted(len(requests) - 1)
        self.ready.extend((request, storable) for request in requests[1:])
        return self.read_request(requests[0], storable)

    def read_request(self, request: Any, storable: bool) -> _Request | dict[str, Any]:
        """A decoded request read (see :meth:`read`); ``storable``: known to pass
        :func:`json_storable` without walking it."""
        re = None
        try:
            if not isinstance(request, dict):
                raise _not_a_request("Must be an object.")
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
                return _Request(re, None, None, request, None)
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
            if not storable:
                json_storable(request)  # text no database stores, numbers that are not finite
            operation.permitted_first(user, request)
            data = operation.parse(request)
            return _Request(re, operation, user, data, operation.together(data))
        except BatonError as exc:
            return _error(re, exc)
        except Exception:  # a bug: answer it as REST would, keep the session
            log.exception("session request failed")
            close_old_connections()
            return _server_error(re)

    def apply(self, group: list[Any]) -> None:
        """Apply a request alone, or a group that goes together as one step; if that step
        fails, each of its requests alone, so that each answer is what it would have been."""
        if len(group) > 1:
            first = group[0]
            try:
                answers = first.operation.perform_together(first.user, [r.data for r in group])
            except BatonError:
                pass  # nothing changed: one at a time below
            except Exception:
                log.exception("session request failed")
                close_old_connections()
                for request in group:
                    self.consumer.reply(_server_error(request.re), hold=True)
                return
            else:
                for request, (status, body) in zip(group, answers):
                    self.respond(request, status, body)
                return
        for item in group:
            if isinstance(item, _Request):
                self.perform(item)
            else:
                self.consumer.reply(item, hold=self.hold)

    def respond(self, request: _Request, status: int, body: dict[str, Any]) -> None:
        try:
            answer = {"re": request.re, "status": status, **request.operation.checked(status, body)}
        except Exception:
            log.exception("session request failed")
            answer = _server_error(request.re)
        self.consumer.reply(answer, hold=True)

    def perform(self, request: _Request) -> None:
        re, operation, user, data = request.re, request.operation, request.user, request.data
        try:
            if operation is None:
                self.authenticate(re, data)
                return
            wait = getattr(data, "wait", 0) or 0
            if operation.session in _LOOKS_ONCE and wait > 0:  # looks here; waits, if it must, in a waiter
                with wait_begun() as begun:
                    status, body = operation.perform(user, data)
                if _WOULD_WAIT[operation.session](status, body):
                    self.wait(re, operation, user, data, begun)
                    return
                wait_dropped(begun)
            elif operation.session in _WOULD_WAIT and wait > 0:
                data.wait = 0
                status, body = operation.perform(user, data)
                if _WOULD_WAIT[operation.session](status, body):
                    data.wait = wait
                    self.wait(re, operation, user, data)
                    return
            else:
                status, body = operation.perform(user, data)
            self.consumer.reply({"re": re, "status": status, **operation.checked(status, body)}, hold=self.hold)
        except BatonError as exc:
            self.consumer.reply(_error(re, exc), hold=self.hold)
        except Exception:  # a bug: answer it as REST would, keep the session
            log.exception("session request failed")
            close_old_connections()
            self.consumer.reply(_server_error(re), hold=self.hold)

    def authenticate(self, re: Any, request: dict[str, Any]) -> None:
        key = request.get("token")
        user = token_user(key) if isinstance(key, str) and len(key) <= 200 else None
        if user is None:
            raise NotAuthenticated("Invalid token.")
        self.consumer.user = user
        self.consumer.reply({"re": re, "status": 200, "user": user.get_username()}, hold=self.hold)

    def wait(self, re: Any, operation, user, data, begun: Begun | None = None) -> None:
        """Hand a request that must wait to a waiter thread; ``begun``: the wait its first
        look began (``transactions.wakeups.wait_begun``), which the waiter goes on with."""
        begun = begun or Begun()
        try:
            with self.lock:
                if self.waiting >= settings.BATON_SESSION_MAX_WAITS:
                    raise Throttled(
                        f"At most {settings.BATON_SESSION_MAX_WAITS} waiting requests per session.", retry_after=1
                    )
                slot = wait_slot_take(user)  # the user's, across sessions and REST (brokers/api/waits.py)
                self.waiting += 1
        except BaseException:
            wait_dropped(begun)
            raise

        def waited() -> None:
            try:
                with wait_resumed(begun):
                    status, body = operation.perform(user, data)
                answer = {"re": re, "status": status, **operation.checked(status, body)}
            except BatonError as exc:
                answer = _error(re, exc)
            except Exception:
                log.exception("session request failed")
                close_old_connections()
                answer = _server_error(re)
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
        touches no database; the session's thread keeps its own connection). A frame goes
        straight to ``receive``."""
        self.scope = scope
        self.base_send = send
        self.channel_layer = None
        try:
            while True:
                message = await receive()
                if message["type"] == "websocket.receive":  # a frame: straight to receive
                    await self.receive(text_data=message.get("text"), bytes_data=message.get("bytes"))
                    continue
                handler = getattr(self, get_handler_name(message), None)
                if handler is None:
                    raise ValueError(f"No handler for message type {message['type']}")
                await handler(message)
        except StopConsumer:
            pass

    def start_replies(self, *, header_token: str | None = None) -> None:
        """The session's applier and pump, on the running event loop."""
        self.loop = asyncio.get_running_loop()
        self.gone = False
        self.batched = False
        self.applier = _Applier(self, header_token=header_token)
        self.pump = self.applier.pump = Pump(
            self.applier,
            self,
            pool=session_pool(),
            max_pending=settings.BATON_SESSION_MAX_PENDING,
            send_buffer=settings.BATON_SESSION_SEND_BUFFER,
            send_timeout_s=settings.BATON_SESSION_SEND_TIMEOUT_S,
        )

    async def connect(self) -> None:
        # read once per session, not per frame (each read of a setting goes through Django's lazy object)
        self.max_length = settings.BATON_MAX_REQUEST_LENGTH
        key = _header_token(self.scope)
        self.start_replies(header_token=key)
        if key is not None:
            session_pool().submit(self.applier.header_authenticated)
            self.user = await self.applier.authenticated  # once per session, on the pool
        #: The client takes several replies in one frame, as a JSON array (docs/api.md).
        #: ``baton.batch.v2`` also lets it send several requests in one frame, as a JSON array.
        offered = self.scope.get("subprotocols", ())
        chosen = next((p for p in offered if p in (BATCHED_V2, BATCHED)), None)
        self.batched, self.arrays = chosen is not None, chosen == BATCHED_V2
        await self.accept(subprotocol=chosen)

    async def websocket_disconnect(self, message: dict[str, Any]) -> None:
        """Channels' disconnect without its tidying of database connections (a hop into the
        shared sync thread): this event loop has none; the pool's threads keep their own."""
        await self.disconnect(message.get("code", 1000))
        raise StopConsumer()

    async def disconnect(self, code: int) -> None:
        self.gone = True
        pump = getattr(self, "pump", None)
        if pump is not None:
            pump.ended()
            pump.stopped()

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if text_data is None:
            self._send_now(
                _error(None, InvalidInput("Send requests as JSON text frames.", errors={"body": ["A binary frame."]}))
            )
            return
        if len(text_data) > self.max_length:
            self._send_now(
                _error(
                    None,
                    MessageTooLarge(
                        f"A request frame may hold at most {self.max_length} characters.",
                        max_request_length=self.max_length,
                        length=len(text_data),
                    ),
                )
            )
            return
        if self.pump.full():
            self._send_now(_error(_peek_id(text_data), Throttled()))
            return
        # an array of requests, from a client of baton.batch.v2: read by the session's thread
        self.pump.received([_Frames(text_data) if self.arrays and text_data[:1] == "[" else text_data])

    # --- replies (from any thread) --------------------------------------------------------

    def reply(self, body: dict[str, Any], *, hold: bool = False) -> None:
        """Encode a reply (once) and send it through the pump: replies made while the loop has
        not yet taken the earlier ones go with them, one wake-up of the loop for all.
        ``hold``: the session's thread has more requests in hand; the pump hands its replies
        over once it has none, or ``HOLD_MAX`` of them or ``HOLD_BYTES`` characters, so that
        a pipelined burst costs the loop one wake-up, not one per reply."""
        text = reply_text(body)
        self.pump.send(text, len(text), hold=hold)

    def flush(self) -> None:
        """Hand the replies held back (``reply(hold=True)``) to the event loop."""
        self.pump.flush()

    def _send_now(self, body: dict[str, Any]) -> None:
        text = reply_text(body)
        self.pump.send_now(text, len(text))

    # --- the pump's link: writing replies (on the loop) -------------------------------------

    def writes(self, made: list[str]) -> list[tuple[str, int]]:
        """Replies taken together: for a client of ``baton.batch``, frames of up to
        ``_BATCH_LENGTH`` characters (a JSON array of replies: one write to the socket each)."""
        if not self.batched or len(made) == 1:
            return [(text, len(text)) for text in made]
        out = []
        start, length = 0, 0
        for end, text in enumerate(made, start=1):
            length += len(text)
            if length >= _BATCH_LENGTH or end == len(made):
                part = made[start:end]
                out.append((part[0] if len(part) == 1 else f"[{','.join(part)}]", length))
                start, length = end, 0
        return out

    def write_nowait(self, text: str):
        """Send ``text``: a send that completes without waiting (the usual case: the transport
        takes the bytes) is made right here, with no task, queue or timer; else what to await
        to finish it (the pump's writer task awaits it)."""
        if self.gone:
            return None
        coroutine = self.base_send({"type": "websocket.send", "text": text})
        try:
            waiting_on = coroutine.send(None)
        except StopIteration:  # sent
            return None
        return _resumed(coroutine, waiting_on)

    def written(self, size: int) -> None:
        pass

    def given_up(self, why: str) -> None:
        if not self.gone:
            self.gone = True
            log.warning("closing a session: %s", why)
            self.loop.create_task(self.close(code=1008))


#: The WebSocket subprotocol of a client that takes replies batched: what the session's
#: threads made while the event loop was busy goes in one frame, a JSON array of replies.
BATCHED = "baton.batch"
#: ``baton.batch``, and the client may send several requests in one frame, a JSON array of
#: them (docs/api.md, "Requests batched").
BATCHED_V2 = "baton.batch.v2"
#: The most characters of replies batched in one frame (a longer reply goes alone).
_BATCH_LENGTH = 1024 * 1024


@types.coroutine
def _resumed(coroutine, waiting_on):
    """Await the rest of ``coroutine``, which has already run up to awaiting ``waiting_on``
    (a send begun outside any task): the task now drives it, as ``await`` would have."""
    while True:
        try:
            sent = yield waiting_on
        except BaseException as exc:  # a cancellation or a timeout: the coroutine's to handle
            try:
                waiting_on = coroutine.throw(exc)
            except StopIteration as stop:
                return stop.value
        else:
            try:
                waiting_on = coroutine.send(sent)
            except StopIteration as stop:
                return stop.value


def _header_token(scope: dict[str, Any]) -> str | None:
    for name, value in scope.get("headers", []):
        if name == b"authorization":
            kind, _, key = value.decode("latin-1").partition(" ")
            if kind.lower() == "token" and key.strip():
                return key.strip()
    return None


def _settled(future: asyncio.Future, result: Any, exc: BaseException | None) -> None:
    """Give ``future`` its outcome, unless it was given up (the session went first)."""
    if future.done():
        return
    if exc is not None:
        future.set_exception(exc)
    else:
        future.set_result(result)


def reply_text(body: dict[str, Any]) -> str:
    """A reply as the text of one frame: compact JSON, non-ASCII characters as themselves.
    Encoded by orjson (a reply of 100 messages of 1 KiB: 70 µs against 0.9 ms for the
    standard library's encoder, docs/performance.md); anything it refuses (an integer
    beyond 64 bits, a type it does not know) by the standard library as before."""
    try:
        return orjson.dumps(body, option=orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:
        return json.dumps(body, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


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

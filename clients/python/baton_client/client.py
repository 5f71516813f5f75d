"""Baton's Python client for applications: brokers, queues, put/get/browse, units of work
with held commits, peek-lock receipts and connections.

Messaging (put, get, browse, units of work, locks, connect) goes over a session, one
WebSocket carrying pipelined requests (:mod:`.session`); administration (brokers, queues,
displays, the transaction graph) over REST. ``Client(..., transport="rest")`` sends
everything over REST: both give the same results and raise the same errors.

Pipelining: over a session, a put under a unit of work (``transaction=`` or
``Transaction.put``) does not wait for its reply; it returns a :class:`PendingPut` at once.
Its reply is read when you use the result (``put.msg_id``, ``put.result()``), or at the
next call under the same unit of work that waits for its reply (check, commit, complete):
if the put failed, *that* call raises the put's error instead, and a commit is then not
sent (the unit of work stays active for you to roll back; the context manager rolls it
back). A get commits nothing, so it does not wait for them: it raises the error of a put
whose reply has already come, and otherwise goes out at once (the session applies the
puts before it), leaving their errors to the next call. A rollback does not wait for them.
Everything else waits for its reply. A put under a unit of work made while an earlier such
put of the session is still unanswered is held back in the client and goes, with the others
held meanwhile, in one frame when that reply comes (or at once before any other request, or
when its result is asked for): while the server is busy, puts that come one by one reach it
together and are applied as one step, each still answered on its own (Nagle's rule; the
``baton.batch.v2`` subprotocol's request arrays).

It needs only the standard library, httpx and websockets (no Django)::

    from baton_client import Client

    with Client("http://127.0.0.1:8000", token) as client:
        client.put("B", "ORDERS", "hello", priority=5)
        message = client.get("B", "ORDERS", wait=10)        # a Message, or None
        with client.transaction("B") as tx:                  # commits on exit,
            tx.put("OUT", b"\\x00binary")                     # rolls back on an exception
            tx.get("IN", preemptive=True)
        if tx.state == "commit_held":                        # an upstream is still open
            tx.wait_committed(timeout=60)

``Client(..., outbox="PATH")`` keeps a persistent put outside a unit of work that cannot
reach the platform in a durable local outbox and forwards it later, exactly once and in
order per queue (:mod:`.outbox`).

Every error the server reports is raised as the class of the shared hierarchy
(:mod:`.errors`, the one the server raises) chosen by its stable ``code`` (``QueueFull``
for ``queue_full``, and so on); :class:`BatonClientError` is the base class's earlier name.
"""

from __future__ import annotations

import base64
import functools
import os
import threading
import time
from concurrent.futures import Future
from dataclasses import MISSING, dataclass, field, fields
from datetime import datetime
from typing import Any, Iterable, Iterator, Mapping
from urllib.parse import quote

import httpx

from .errors import (
    AlreadyExists,
    BatonError,
    CommitTimeout,
    Conflict,
    GetInhibited,
    InvalidInput,
    LockLost,
    MessageTooLarge,
    MethodNotAllowed,
    NetworkError,
    NotAuthenticated,
    NotEmpty,
    NotFound,
    OptionsConflict,
    OutboxFull,
    PermissionDenied,
    PutInhibited,
    QueueFull,
    QueueInUse,
    RequestTimeout,
    ServerError,
    Throttled,
    TransactionBackedOut,
    TransactionNotActive,
    WorkflowConflict,
    error_from_body,
)
from .outbox import DEFAULT_KEY_RETENTION_S, DEFAULT_MAX_BYTES, DEFAULT_MAX_MESSAGES, Outbox
from .session import Session


@functools.lru_cache(maxsize=1)
def _verify_default() -> Any:
    """The certificates httpx verifies against by default, loaded once for every client of
    the process (httpx loads them for each client it makes, even for http: about 20 ms of
    CPU each). Where httpx cannot build it, True: httpx's own default."""
    make = getattr(httpx, "create_ssl_context", None)
    return make() if make is not None else True


__all__ = [
    "Client",
    "Message",
    "Batch",
    "Lock",
    "Transaction",
    "CommitResult",
    "CheckResult",
    "Connection",
    "Browser",
    "PendingPut",
    "PendingReply",
    "BatonError",
    "BatonClientError",
    "InvalidInput",
    "NotAuthenticated",
    "PermissionDenied",
    "NotFound",
    "Conflict",
    "TransactionBackedOut",
    "TransactionNotActive",
    "PutInhibited",
    "GetInhibited",
    "QueueFull",
    "QueueInUse",
    "OptionsConflict",
    "AlreadyExists",
    "NotEmpty",
    "MessageTooLarge",
    "LockLost",
    "Throttled",
    "MethodNotAllowed",
    "ServerError",
    "NetworkError",
    "RequestTimeout",
    "CommitTimeout",
    "WorkflowConflict",
    "OutboxFull",
]

#: The longest ``wait`` the server accepts for one long-poll (``BATON_MAX_WAIT_S``' default).
MAX_WAIT_S = 60.0


# --- errors -------------------------------------------------------------------------------

#: The client's earlier name for the base class.
BatonClientError = BatonError


def error_from_response(response: httpx.Response) -> BatonError:
    """The exception for an error response: by its ``code`` (see :func:`.errors.error_from_body`)."""
    try:
        body = response.json()
    except ValueError:
        body = None
    error = error_from_body(
        response.status_code,
        body,
        text=response.text or response.reason_phrase,
        retry_after=response.headers.get("Retry-After"),
    )
    return error


# --- values -------------------------------------------------------------------------------


def _time(value: Any) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(value)
    except (TypeError, ValueError):
        return None


def _id(value: Any) -> str | None:
    """A transaction or connection given as an object or an id."""
    if value is None:
        return None
    return getattr(value, "id", None) or getattr(value, "conn_id", None) or str(value)


_FIELDS: dict[type, tuple[frozenset[str], dict[str, Any]]] = {}


def _message_fields(cls: type) -> tuple[frozenset[str], dict[str, Any]]:
    """A message class's fields taken from the server's JSON as they are, and every field's
    default (``extra`` and the client are given at each construction)."""
    found = _FIELDS.get(cls)
    if found is None:
        every = fields(cls)
        known = frozenset(f.name for f in every) - {"extra", "_client", "body", "transaction"}
        # body_base64 left out: made from the body when first read, unless the server sent it
        defaults = {f.name: f.default for f in every if f.default is not MISSING and f.name != "body_base64"}
        found = _FIELDS[cls] = (known, defaults)
    return found


@dataclass(eq=False, repr=False)
class Message:
    """A message as the server returned it. ``body`` is the bytes (decoded from
    ``body_base64``); ``text`` decodes them as UTF-8. A peek-locked message carries a
    :attr:`receipt` (:class:`Lock`) to complete, abandon, renew or dead-letter it."""

    msg_id: str
    body: bytes = b""
    correl_id: str | None = None
    group_id: str | None = None
    msg_type: str | None = None
    priority: int | None = None
    persistence: str | None = None
    expiry_ms: int | None = None
    expires_at: datetime | None = None
    format: str | None = None
    reply_to_queue: str | None = None
    reply_to_broker: str | None = None
    report: list[str] | None = None
    properties: dict[str, Any] | None = None
    refers_to: dict[str, str] | None = None
    put_time: datetime | None = None
    put_application: str | None = None
    backout_count: int = 0
    delivery_count: int = 0
    dead_letter_reason: str | None = None
    dead_letter_from: str | None = None
    transmission_header: dict[str, Any] | None = None
    feedback: str | None = None
    lock_token: str | None = None
    locked_until: datetime | None = None
    queue: str | None = None
    broker: str | None = None
    body_base64: str = ""
    #: The unit of work the put or get ran under (None when it was immediate).
    transaction: str | None = None
    #: A put kept in the client's outbox, to be forwarded (``msg_id`` is None until then).
    queued: bool = False
    #: Fields the server sent that this client does not know.
    extra: dict[str, Any] = field(default_factory=dict, repr=False)
    _client: "Client | None" = field(default=None, repr=False)

    _TIMES = ("expires_at", "put_time", "locked_until")

    @classmethod
    def from_json(
        cls, data: Mapping[str, Any], *, client: "Client | None" = None, transaction: str | None = None
    ) -> "Message":
        known, defaults = _message_fields(cls)
        values: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        for name, value in data.items():
            if name in known:
                values[name] = value
            elif name != "body" and name != "transaction":
                extra[name] = value
        for name in cls._TIMES:
            value = data.get(name)
            values[name] = _time(value) if value else None
        b64 = data.get("body_base64")
        if isinstance(b64, str):
            body = base64.b64decode(b64)
        elif isinstance(data.get("body"), str):
            body = data["body"].encode("utf-8")  # body_base64: made when first read (_Base64OfBody)
        else:
            body = b""
        txn = data.get("transaction", transaction)
        if "msg_id" not in values:  # not a message: the constructor says what is missing
            return cls(body=body, transaction=txn, extra=extra, _client=client, **values)
        # what the dataclass's __init__ would do, without its call per field (a get of 100
        # messages builds 100 of them)
        message = cls.__new__(cls)
        state = message.__dict__
        state.update(defaults)
        state.update(values)
        state["body"], state["transaction"] = body, txn
        state["extra"], state["_client"] = extra, client
        return message

    def __repr__(self) -> str:
        body = self.body if len(self.body) <= 40 else self.body[:40] + b"..."
        lock = f", lock_token={self.lock_token!r}" if self.lock_token else ""
        return (
            f"Message(msg_id={self.msg_id!r}, broker={self.broker!r}, queue={self.queue!r}, "
            f"priority={self.priority!r}, body={body!r}{lock})"
        )

    def result(self, timeout: float | None = None) -> "Message":
        """The message itself (a :class:`PendingPut` answers the same call by waiting)."""
        return self

    @property
    def text(self) -> str:
        """The body as UTF-8 text (UnicodeDecodeError for a binary body)."""
        return self.body.decode("utf-8")

    @property
    def receipt(self) -> "Lock | None":
        """The peek-lock on this message, or None if it was not peek-locked."""
        if not self.lock_token:
            return None
        if self._client is None:
            raise RuntimeError("This message was not received through a Client.")
        return Lock(self._client, self.lock_token, self.locked_until, message=self)

    lock = receipt

    def complete(self, transaction: "Transaction | str | None" = None) -> str:
        """Complete the peek-lock (see :meth:`Lock.complete`)."""
        return self._receipt().complete(transaction)

    def abandon(self) -> str:
        return self._receipt().abandon()

    def renew(self) -> datetime | None:
        return self._receipt().renew()

    def dead_letter(self, reason: str) -> str:
        return self._receipt().dead_letter(reason)

    def _receipt(self) -> "Lock":
        lock = self.receipt
        if lock is None:
            raise ValueError(f"Message {self.msg_id} was not got with mode='peek_lock'; it has no lock.")
        return lock


class _Base64OfBody:
    """``Message.body_base64`` of a message whose body the server sent as text: the body's
    base64, made when first read and kept (a reply of 100 text bodies made 100 of them
    before, each 1.3 µs for a 1 KiB body, and they are seldom read). A value set (by the
    constructor, or the server's own ``body_base64``) is the instance's and comes first."""

    def __get__(self, instance: "Message | None", owner: type) -> str:
        if instance is None:
            return ""  # the field's default, as the class shows it
        value = base64.b64encode(instance.body).decode("ascii")
        instance.__dict__["body_base64"] = value
        return value


Message.body_base64 = _Base64OfBody()  # type: ignore[assignment]  # after @dataclass has read the default


class Batch(list):
    """The messages of one get (a list), with the server's ``reason`` when it is empty
    (``"empty"``, ``"next_in_order_in_flight"``, ...) and the unit of work it ran under."""

    def __init__(
        self, messages: Iterable[Message] = (), *, reason: str | None = None, transaction: str | None = None
    ) -> None:
        super().__init__(messages)
        self.reason = reason
        self.transaction = transaction

    def __repr__(self) -> str:
        return f"Batch({list.__repr__(self)}, reason={self.reason!r}, transaction={self.transaction!r})"


class Lock:
    """A peek-lock receipt: the message stays on the queue, hidden, until it is completed
    (removed), abandoned (given back), dead-lettered, or the lock runs out."""

    def __init__(
        self, client: "Client", token: str, locked_until: datetime | None = None, *, message: Message | None = None
    ) -> None:
        self._client = client
        self.token = token
        self.locked_until = locked_until
        self.message = message
        self.outcome: str | None = None

    def __repr__(self) -> str:
        return f"Lock({self.token!r}, locked_until={self.locked_until!r}, outcome={self.outcome!r})"

    def _post(self, action: str, body: dict | None = None) -> dict:
        return self._client._lock_action(self.token, action, body or {})

    def complete(self, transaction: "Transaction | str | None" = None) -> str:
        """Remove the message. Under a unit of work it goes when that commits (``"pending_commit"``);
        otherwise at once (``"completed"``)."""
        body = {"transaction": _id(transaction)} if transaction is not None else {}
        self.outcome = self._post("complete", body).get("outcome")
        return self.outcome

    def abandon(self) -> str:
        """Unlock the message at once: ``"available"``, or ``"dead_lettered"`` past the delivery limit."""
        self.outcome = self._post("abandon").get("outcome")
        return self.outcome

    def renew(self) -> datetime | None:
        """Extend the lock by the queue's lock duration from now; returns the new end."""
        self.locked_until = _time(self._post("renew").get("locked_until"))
        if self.message is not None:
            self.message.locked_until = self.locked_until
        return self.locked_until

    def dead_letter(self, reason: str) -> str:
        """Move the message to the dead-letter queue with ``reason``; returns that queue's name."""
        data = self._post("dead-letter", {"reason": reason})
        self.outcome = data.get("outcome")
        return data.get("queue")


# --- units of work ------------------------------------------------------------------------


@dataclass
class CommitResult:
    """What a commit answered: ``state`` is ``"committed"`` or ``"commit_held"`` (then
    ``waiting_on`` lists the open upstream transactions; the commit happens by itself when
    they commit)."""

    state: str
    waiting_on: list[str] = field(default_factory=list)
    transaction: str | None = None

    @property
    def committed(self) -> bool:
        return self.state == "committed"

    @property
    def held(self) -> bool:
        return self.state == "commit_held"


@dataclass
class CheckResult:
    """The ready-check: ``result`` is ``"ready"``, ``"pending"`` (see ``waiting_on``) or
    ``"backed_out"`` (see ``reason``)."""

    result: str
    waiting_on: list[str] = field(default_factory=list)
    reason: str | None = None


class Transaction:
    """A unit of work on a broker. Use it as a context manager: it commits on a normal exit
    (waiting up to ``commit_wait`` seconds for a held commit; if still held, the block ends
    normally with ``state == "commit_held"`` and ``waiting_on`` set) and rolls back when the
    block raises."""

    def __init__(self, client: "Client", data: Mapping[str, Any], *, commit_wait: float = 0) -> None:
        self._client = client
        self.commit_wait = commit_wait
        self.id: str = data["id"]
        self.waiting_on: list[str] = []
        self.cascaded: list[str] = []
        self._update(data)

    def _update(self, data: Mapping[str, Any]) -> None:
        self.data = dict(data)
        self.broker: str | None = data.get("broker")
        self.state: str = data.get("state", "active")
        self.reason: str | None = data.get("reason")
        self.cause: str | None = data.get("cause")
        self.upstream: list[str] = list(data.get("upstream") or [])
        self.downstream: list[str] = list(data.get("downstream") or [])
        self.created_at = _time(data.get("created_at"))
        self.deadline_at = _time(data.get("deadline_at"))
        self.resolved_at = _time(data.get("resolved_at"))

    def __repr__(self) -> str:
        return f"Transaction({self.id!r}, broker={self.broker!r}, state={self.state!r})"

    @property
    def _path(self) -> str:
        return f"/api/transactions/{quote(self.id, safe='')}/"

    # work under it
    def put(self, queue: str, body: str | bytes | None = None, **options: Any) -> Any:
        """Put under this unit of work (same arguments as :meth:`Client.put`, without broker)."""
        return self._client.put(self.broker, queue, body, transaction=self.id, **options)

    def get(self, queue: str, **options: Any) -> Any:
        """Get under this unit of work (same arguments as :meth:`Client.get`, without broker)."""
        return self._client.get(self.broker, queue, transaction=self.id, **options)

    def publish(self, topic: str, body: str | bytes | None = None, **options: Any) -> dict:
        """Publish under this unit of work (same arguments as :meth:`Client.publish`, without broker)."""
        return self._client.publish(self.broker, topic, body, transaction=self.id, **options)

    # state
    def refresh(self) -> "Transaction":
        """Reload state, reason, upstream and downstream from the server."""
        self._update(self._client._request("GET", self._path))
        return self

    display = refresh

    def commit(self, wait: float = 0) -> CommitResult:
        """Ask to commit, waiting up to ``wait`` seconds while the commit is held.
        Raises TransactionBackedOut if it was or becomes rolled back."""
        try:
            data = self._client._transaction_action(self.id, "commit", {"wait": wait}, wait=wait)
        except TransactionBackedOut as exc:
            self.state, self.reason = "rolled_back", exc.reason
            raise
        self.state = data.get("state", "committed")
        self.waiting_on = list(data.get("waiting_on") or [])
        return CommitResult(self.state, self.waiting_on, self.id)

    def _commit_within(self, timeout: float, poll: float = 30) -> CommitResult:
        """Commit, long-polling in rounds of at most ``poll`` seconds until committed or
        ``timeout`` has passed; returns what the last round answered."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = max(0.0, deadline - time.monotonic())
            result = self.commit(wait=min(remaining, poll, MAX_WAIT_S))
            if result.committed or time.monotonic() >= deadline:
                return result

    def wait_committed(self, timeout: float = 60, *, poll: float = 30) -> CommitResult:
        """Ask to commit and keep long-polling until it is committed. Raises
        TransactionBackedOut if it is backed out, CommitTimeout if still held after ``timeout``."""
        result = self._commit_within(timeout, poll)
        if not result.committed:
            raise CommitTimeout(
                f"Transaction {self.id} is still commit_held after {timeout:g}s.",
                transaction=self.id,
                waiting_on=result.waiting_on,
            )
        return result

    def rollback(self) -> list[str]:
        """Roll back; returns the ids of the downstream transactions backed out with it."""
        data = self._client._transaction_action(self.id, "rollback", {})
        self.state = data.get("state", "rolled_back")
        self.reason = data.get("reason", self.reason)
        self.cascaded = list(data.get("cascaded") or [])
        return self.cascaded

    def check(self, wait: float = 0) -> CheckResult:
        """The ready-check, without committing: waits up to ``wait`` seconds while pending."""
        data = self._client._transaction_action(self.id, "check", {"wait": wait}, wait=wait)
        result = CheckResult(data.get("result", ""), list(data.get("waiting_on") or []), data.get("reason"))
        self.waiting_on = result.waiting_on
        return result

    # context manager
    def __enter__(self) -> "Transaction":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:
            if self.state in ("active", "commit_held"):
                try:
                    self.rollback()
                except BatonClientError:
                    pass  # the block's own exception matters more
            return None
        if self.state in ("active", "commit_held"):
            try:
                self._commit_within(self.commit_wait)
            except BatonError as exc:
                if not isinstance(exc, TransactionBackedOut) and self._client._put_failed(exc):
                    # a pipelined put failed: the commit was not sent; give the unit of work back
                    try:
                        self.rollback()
                    except BatonError:
                        pass
                raise
        return None


# --- connections --------------------------------------------------------------------------


class Connection:
    """A session with a broker under a client name. The broker remembers, per client name,
    the msg_id of the last committed put and get (read back on the next connect). Closing
    rolls back its open unit of work."""

    def __init__(self, client: "Client", data: Mapping[str, Any]) -> None:
        self._client = client
        self.conn_id: str = data["conn_id"]
        self._update(data)

    def _update(self, data: Mapping[str, Any]) -> None:
        self.data = dict(data)
        self.broker: str | None = data.get("broker", getattr(self, "broker", None))
        self.client_name: str | None = data.get("client_name")
        self.last_put_msg_id: str | None = data.get("last_put_msg_id")
        self.last_got_msg_id: str | None = data.get("last_got_msg_id")
        self.current_transaction: str | None = data.get("current_transaction")

    @property
    def id(self) -> str:
        return self.conn_id

    def __repr__(self) -> str:
        return f"Connection({self.conn_id!r}, client_name={self.client_name!r})"

    def put(self, queue: str, body: str | bytes | None = None, **options: Any) -> Any:
        return self._client.put(self.broker, queue, body, connection=self.conn_id, **options)

    def get(self, queue: str, **options: Any) -> Any:
        return self._client.get(self.broker, queue, connection=self.conn_id, **options)

    def refresh(self) -> "Connection":
        self._update(self._client._request("GET", f"/api/connections/{quote(self.conn_id, safe='')}/"))
        return self

    def close(self) -> None:
        self._client._request("DELETE", f"/api/connections/{quote(self.conn_id, safe='')}/")

    def __enter__(self) -> "Connection":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


# --- browse -------------------------------------------------------------------------------


class Browser:
    """Iterates over a queue's messages without removing them, following the cursor.
    Stops when a page comes back empty, unless ``follow`` is set: then it keeps polling
    every ``poll_interval`` seconds (until ``follow_timeout``, if given). ``cursor`` is the
    position to resume from later."""

    def __init__(
        self,
        client: "Client",
        broker: str,
        queue: str,
        *,
        cursor: str | None = None,
        ordered: bool = False,
        page_size: int = 50,
        follow: bool = False,
        poll_interval: float = 1.0,
        follow_timeout: float | None = None,
    ) -> None:
        self._client, self.broker, self.queue = client, broker, queue
        self.cursor, self.ordered, self.page_size = cursor, ordered, page_size
        self.follow, self.poll_interval, self.follow_timeout = follow, poll_interval, follow_timeout

    def __iter__(self) -> Iterator[Message]:
        deadline = None if self.follow_timeout is None else time.monotonic() + self.follow_timeout
        while True:
            before = self.cursor
            messages, self.cursor = self._client.browse_page(
                self.broker,
                self.queue,
                cursor=self.cursor,
                limit=self.page_size,
                ordered=self.ordered,
            )
            yield from messages
            if messages or self.cursor != before:  # a page of only expired messages still moves on
                continue
            if not self.follow or (deadline is not None and time.monotonic() >= deadline):
                return
            time.sleep(self.poll_interval)  # polling the server for new arrivals


# --- pipelined puts -----------------------------------------------------------------------


class PendingPut:
    """A put sent under a unit of work over a session, its reply not read yet.

    ``result()`` waits for the reply and returns the stored :class:`Message` (or the list,
    for ``messages=[...]``), or raises the put's error; reading any attribute of the
    message (``put.msg_id``) does the same. Until then, the error surfaces at the next
    call under the same unit of work that waits for its reply (see the module's text)."""

    def __init__(
        self, client: "Client", future: Future, *, transaction: str, many: bool, sent: Mapping[str, Any]
    ) -> None:
        self._client, self._future, self._transaction, self._many = client, future, transaction, many
        self._sent = sent
        self._value: Any = None
        self._error: BaseException | None = None
        self._read = False

    def __repr__(self) -> str:
        state = "done" if self._future.done() else "pending"
        return f"PendingPut(transaction={self._transaction!r}, {state})"

    def done(self) -> bool:
        """Whether the reply has come (without waiting)."""
        return self._future.done()

    def result(self, timeout: float | None = None) -> Any:
        """The stored message (or list of messages); raises the put's error."""
        if not self._read:
            try:
                data = _put_bodies(self._client._session.result("put", self._future), self._sent, many=self._many)
                txn = data.get("transaction") or self._transaction
                if self._many:
                    self._value = [
                        Message.from_json(m, client=self._client, transaction=txn) for m in data.get("messages", [])
                    ]
                else:
                    self._value = Message.from_json(data, client=self._client, transaction=txn)
            except BatonError as exc:
                self._error = exc
            self._read = True
        if self._error is not None:
            raise self._error
        return self._value

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.result(), name)

    def __iter__(self) -> Iterator[Message]:
        return iter(self.result())

    def __len__(self) -> int:
        return len(self.result())

    def __getitem__(self, index: int) -> Message:
        return self.result()[index]


class PendingReply:
    """A call sent with ``nowait=True`` (a step's report under a unit of work): ``result()``
    waits for its reply and returns its body, or raises its error; ``done()`` says whether
    the reply has come. Over REST the call was answered before it returned."""

    def __init__(self, op: str, *, future: Future | None = None, session: Session | None = None) -> None:
        self._op, self._future, self._session = op, future, session

    @classmethod
    def answered(cls, op: str, call: Any) -> "PendingReply":
        """A reply already had: ``call()``'s result, or the BatonError it raised."""
        future: Future = Future()
        try:
            future.set_result(call())
        except BatonError as exc:
            future.set_exception(exc)
        return cls(op, future=future)

    def __repr__(self) -> str:
        return f"PendingReply({self._op!r}, {'done' if self.done() else 'pending'})"

    def done(self) -> bool:
        return self._future.done()

    def result(self) -> dict:
        if self._session is None:
            return self._future.result()
        return self._session.result(self._op, self._future)


# --- the client ---------------------------------------------------------------------------


def _put_bodies(data: Mapping[str, Any], sent: Mapping[str, Any], *, many: bool) -> dict[str, Any]:
    """A put's reply (asked with ``bodies: none``) with each message's body as it was sent:
    the messages put are the ones sent, in order, less those skipped as duplicates."""

    def with_body(reply: Mapping[str, Any], message: Mapping[str, Any]) -> dict[str, Any]:
        out = dict(reply)
        if "body" not in out and "body_base64" not in out and "msg_id" in out:
            for name in ("body", "body_base64"):
                if name in message:
                    out[name] = message[name]
            if "body" not in out and "body_base64" not in out:
                out["body"] = ""
        return out

    if not many:
        return with_body(data, sent)
    skipped = {d.get("index") for d in data.get("duplicates") or ()}
    put = [m for i, m in enumerate(sent.get("messages", [])) if i not in skipped]
    return {**data, "messages": [with_body(r, m) for r, m in zip(data.get("messages", []), put)]}


def _body_fields(body: str | bytes | bytearray | memoryview | None) -> dict[str, Any]:
    if body is None:
        return {}
    if isinstance(body, str):
        return {"body": body}
    if isinstance(body, (bytes, bytearray, memoryview)):
        return {"body_base64": base64.b64encode(bytes(body)).decode("ascii")}
    raise TypeError(f"A message body is str or bytes, not {type(body).__name__}.")


def _message_json(item: Any, defaults: Mapping[str, Any]) -> dict[str, Any]:
    """One outgoing message: a str/bytes body, or a dict of fields whose ``body`` may be bytes."""
    if isinstance(item, Mapping):
        data = {**defaults, **{k: v for k, v in item.items() if k != "body"}}
        if "body" in item:
            data.update(_body_fields(item["body"]))
        return {k: v for k, v in data.items() if v is not None}
    return {**{k: v for k, v in defaults.items() if v is not None}, **_body_fields(item)}


class Client:
    """A connection to one Baton platform: ``Client(base_url, token, timeout=30)``.

    ``transport="session"`` (the default) sends messaging over a WebSocket session
    (opened on first use, again after a drop) and administration over REST;
    ``transport="rest"`` sends everything over REST (one keep-alive HTTP connection pool).
    An ``httpx`` transport object (e.g. ``httpx.MockTransport``) means REST through it.
    Close the client with :meth:`close` or use it as a context manager. ``timeout`` is for
    the server's answer; long-polls (``wait``) get their wait added to it.

    ``outbox``: the path of a durable outbox (:mod:`.outbox`; ``client.outbox``), bounded by
    ``outbox_max_messages`` and ``outbox_max_bytes``; its keys are remembered by the
    platform for ``outbox_key_retention`` seconds."""

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        *,
        timeout: float = 30.0,
        transport: str | httpx.BaseTransport = "session",
        verify: Any = True,
        outbox: str | os.PathLike | None = None,
        outbox_max_messages: int = DEFAULT_MAX_MESSAGES,
        outbox_max_bytes: int = DEFAULT_MAX_BYTES,
        outbox_key_retention: float = DEFAULT_KEY_RETENTION_S,
    ) -> None:
        headers = {"Accept": "application/json", "User-Agent": "baton-client/0.2"}
        if token:
            headers["Authorization"] = f"Token {token}"
        http_transport = None
        if not isinstance(transport, str):
            http_transport, transport = transport, "rest"
        if transport not in ("session", "rest"):
            raise ValueError(f'transport is "session" or "rest", not {transport!r}.')
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.transport = transport
        self._http = httpx.Client(
            base_url=self.base_url,
            headers=headers,
            timeout=timeout,
            transport=http_transport,
            verify=_verify_default() if verify is True else verify,
        )
        self._session = Session(self.base_url, token, timeout=timeout) if transport == "session" else None
        self._pending: dict[str, list[PendingPut]] = {}  # pipelined puts per unit of work, replies unread
        self._pending_lock = threading.Lock()
        #: Units of work a pipelined put of which failed: never committed by this client.
        self._failed_units: dict[str, BaseException] = {}
        #: The durable outbox (:mod:`.outbox`), or None.
        self.outbox: Outbox | None = None
        if outbox is not None:
            self.outbox = Outbox(
                outbox,
                self,
                max_messages=outbox_max_messages,
                max_bytes=outbox_max_bytes,
                key_retention=outbox_key_retention,
            )

    def __repr__(self) -> str:
        return f"Client({self.base_url!r}, transport={self.transport!r})"

    def open(self) -> "Client":
        """Open the session now rather than with the first operation that uses it (an
        application that wants its first operation as fast as the rest); nothing over REST."""
        if self._session is not None:
            self._session.open()
        return self

    def close(self) -> None:
        if self.outbox is not None:
            self.outbox.stop()  # a forward under way fails with the session: its messages stay
        if self._session is not None:
            self._session.close()
        self._http.close()
        if self.outbox is not None:
            self.outbox.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- plumbing ------------------------------------------------------------------------
    def _request(
        self, method: str, path: str, *, json: Any = None, params: Mapping[str, Any] | None = None, wait: float = 0
    ) -> Any:
        timeout = self.timeout + (wait or 0)
        try:
            response = self._http.request(method, path, json=json, params=params, timeout=timeout)
        except httpx.TimeoutException as exc:
            raise RequestTimeout(f"{method} {path}: no answer within {timeout:g}s ({exc}).") from exc
        except httpx.HTTPError as exc:
            raise NetworkError(f"{method} {path}: {exc}") from exc
        if response.status_code >= 400:
            raise error_from_response(response)
        if self.outbox is not None:
            self.outbox.answered()
        if response.status_code == 204 or not response.content:
            return None
        try:
            return response.json()
        except ValueError as exc:
            raise ServerError(f"{method} {path}: the answer was not JSON.", body=response.text[:500]) from exc

    def _operation(
        self,
        op: str,
        fields: dict[str, Any],
        method: str,
        path: str,
        *,
        body: Any = None,
        params: Mapping[str, Any] | None = None,
        wait: float = 0,
        nowait: bool = False,
    ) -> Any:
        """A messaging operation: over the session (``op`` with ``fields``), or over REST
        (``method path`` with ``body`` or ``params``). Under a unit of work, its pipelined
        puts' replies are read first. ``nowait`` (a call that commits nothing): sent without
        waiting for its reply, a :class:`PendingReply`."""
        transaction = fields.get("transaction")
        if transaction is not None and op not in ("rollback", "transaction"):
            failed = self._failed_units.get(transaction)
            if failed is not None:  # a pipelined put of it failed: it must never commit without it
                raise failed
            # A get commits nothing: it goes out without waiting for the puts still unanswered
            # (the session applies them first); their errors surface at the next call.
            self._settle(transaction, answered_only=(op == "get" or nowait) and self._session is not None)
        if nowait:
            if self._session is not None:
                return PendingReply(op, future=self._session.send(op, fields), session=self._session)
            return PendingReply.answered(op, lambda: self._request(method, path, json=body, params=params))
        if self._session is not None:
            data = self._session.call(op, fields, wait=wait)
            if self.outbox is not None:
                self.outbox.answered()
            return data
        return self._request(method, path, json=body, params=params, wait=wait)

    def _settle(self, transaction: str, *, raise_errors: bool = True, answered_only: bool = False) -> None:
        """Read the replies of the unit of work's pipelined puts; raise the first error.
        ``answered_only``: only those whose reply has come; the rest stay pending."""
        with self._pending_lock:
            pending = self._pending.pop(transaction, [])
            if answered_only:
                answered: list[PendingPut] = []
                waiting: list[PendingPut] = []
                for put in pending:
                    (answered if put.done() else waiting).append(put)
                if waiting:
                    self._pending[transaction] = waiting
                pending = answered
        first: BaseException | None = None
        for put in pending:
            try:
                put.result()
            except BatonError as exc:
                exc.details.setdefault("pipelined_put", True)
                first = first or exc
        if first is not None:
            if isinstance(first, (NetworkError, ServerError)):
                # No answer came: the unit of work may or may not hold that put. A commit
                # retried after this error (which looks like the commit's own) would commit
                # it without the caller knowing which, so the client never commits it: every
                # later call under it but a rollback (or reading its state) raises this error
                # again; the caller rolls it back, or it times out. A put the server refused
                # is different: it is known not to be there, and the error is raised once.
                self._failed_units[transaction] = first
            if raise_errors:
                raise first

    @staticmethod
    def _put_failed(error: BaseException) -> bool:
        """Whether ``error`` is a pipelined put's, raised in place of a later call."""
        return isinstance(error, BatonError) and error.details.get("pipelined_put") is True

    def _lock_action(self, token: str, action: str, body: dict) -> dict:
        fields = {"lock_token": token, **body}
        return self._operation(
            action.replace("-", "_"), fields, "POST", f"/api/locks/{quote(token, safe='')}/{action}/", body=body
        )

    def _transaction_action(self, transaction: str, action: str, body: dict, *, wait: float = 0) -> dict:
        if action == "rollback":
            self._settle(transaction, raise_errors=False)
        return self._operation(
            action,
            {"transaction": transaction, **body},
            "POST",
            f"/api/transactions/{quote(transaction, safe='')}/{action}/",
            body=body,
            wait=wait,
        )

    @staticmethod
    def _name(name: str) -> str:
        # names may hold '/' (matched by the route) and '%' (must be escaped)
        return quote(name, safe="/")

    def _broker_path(self, broker: str) -> str:
        return f"/api/brokers/{self._name(broker)}/"

    def _queue_path(self, broker: str, queue: str) -> str:
        return f"{self._broker_path(broker)}queues/{self._name(queue)}/"

    def _all_pages(self, path: str) -> list[dict]:
        rows: list[dict] = []
        while True:
            page = self._request("GET", path, params={"offset": len(rows), "limit": 1000})
            results = page.get("results") or []
            rows.extend(results)
            if not results or len(rows) >= page.get("count", 0):
                return rows

    # -- brokers -------------------------------------------------------------------------
    def list_brokers(self) -> list[dict]:
        return self._all_pages("/api/brokers/")

    def define_broker(self, name: str, **attributes: Any) -> dict:
        """Define a broker (with its dead-letter queue): description, dead_letter_queue,
        transaction_timeout_ms, max_message_length, default_persistence."""
        return self._request("POST", "/api/brokers/", json={"name": name, **attributes})

    def display_broker(self, name: str) -> dict:
        return self._request("GET", self._broker_path(name))

    def alter_broker(self, name: str, **changes: Any) -> dict:
        return self._request("PATCH", self._broker_path(name), json=changes)

    def delete_broker(self, name: str, *, purge: bool = False) -> None:
        self._request("DELETE", self._broker_path(name), params={"purge": "true"} if purge else None)

    # -- queues --------------------------------------------------------------------------
    def list_queues(self, broker: str) -> list[dict]:
        return self._all_pages(self._broker_path(broker) + "queues/")

    def define_queue(self, broker: str, name: str, **attributes: Any) -> dict:
        """Define a queue: kind, usage, max_depth, max_message_length, put_enabled, get_enabled,
        default_priority, default_persistence, delivery_sequence, read_order, enforce_order,
        backout_threshold, backout_queue, lock_duration_ms, default_access, remote_broker,
        remote_queue, transmission_queue, description (see docs/api.md)."""
        return self._request("POST", self._broker_path(broker) + "queues/", json={"name": name, **attributes})

    def display_queue(self, broker: str, name: str) -> dict:
        """The queue's definition with ``depth``, ``uncommitted_puts``, ``in_flight`` and ``locked``."""
        return self._request("GET", self._queue_path(broker, name))

    def alter_queue(self, broker: str, name: str, **changes: Any) -> dict:
        return self._request("PATCH", self._queue_path(broker, name), json=changes)

    def delete_queue(self, broker: str, name: str, *, purge: bool = False) -> None:
        """Delete a queue; one that holds messages needs ``purge=True`` (else NotEmpty)."""
        self._request("DELETE", self._queue_path(broker, name), params={"purge": "true"} if purge else None)

    # -- messages ------------------------------------------------------------------------
    def put(
        self,
        broker: str,
        queue: str,
        body: str | bytes | None = None,
        *,
        messages: Iterable[Any] | None = None,
        transaction: Transaction | str | None = None,
        syncpoint: str | None = None,
        connection: Connection | str | None = None,
        put_application: str | None = None,
        **descriptor: Any,
    ) -> Any:
        """Put one message (``body``: str, or bytes sent as body_base64) and return the stored
        :class:`Message`; or, with ``messages=[...]`` (bodies or dicts of fields), put them
        all at once and return a list. ``descriptor`` fields (priority, correl_id, group_id,
        msg_type, persistence, expiry_ms, format, reply_to_queue, reply_to_broker, report,
        properties, refers_to) apply to every message. ``transaction``/``syncpoint``/
        ``connection`` choose the unit of work; ``Message.transaction`` tells which ran.

        Over a session, a put under ``transaction`` is pipelined: it returns a
        :class:`PendingPut` at once (see the module's text)."""
        envelope = {
            "transaction": _id(transaction),
            "syncpoint": syncpoint,
            "connection": _id(connection),
            "put_application": put_application,
        }
        envelope = {k: v for k, v in envelope.items() if v is not None}
        envelope["bodies"] = "none"  # the reply leaves out the bodies: they are the ones sent
        many = messages is not None
        if many:
            if body is not None:
                raise TypeError("Give a body or messages, not both.")
            payload = {"messages": [_message_json(m, descriptor) for m in messages], **envelope}
        else:
            payload = {**_message_json(body if body is not None else "", descriptor), **envelope}
        txn = envelope.get("transaction")
        if self._session is not None and txn is not None:
            future = self._session.send("put", {"broker": broker, "queue": queue, **payload}, defer=True)
            pending = PendingPut(self, future, transaction=txn, many=many, sent=payload)
            with self._pending_lock:
                self._pending.setdefault(txn, []).append(pending)
            return pending
        if self.outbox is not None and Outbox.takes(payload, many):
            return self.outbox.put(broker, queue, payload, many=many)
        return self._put_now(broker, queue, payload, many=many)

    def _forward_put(self, broker: str, queue: str, payload: dict[str, Any]) -> Any:
        """A put of the outbox's kept messages (``{"messages": [...]}``), as it is."""
        return self._operation(
            "put",
            {"broker": broker, "queue": queue, **payload},
            "POST",
            self._queue_path(broker, queue) + "messages/",
            body=payload,
        )

    def _put_now(self, broker: str, queue: str, payload: dict[str, Any], *, many: bool) -> Any:
        """A put sent and answered (not pipelined): the message, or the list of them."""
        data = self._forward_put(broker, queue, payload)
        data = _put_bodies(data, payload, many=many)
        if many:
            txn = data.get("transaction")
            return [Message.from_json(m, client=self, transaction=txn) for m in data.get("messages", [])]
        return Message.from_json(data, client=self)

    def get(
        self,
        broker: str,
        queue: str,
        *,
        wait: float = 0,
        batch: int | None = None,
        transaction: Transaction | str | None = None,
        preemptive: bool = False,
        ordered: bool | None = None,
        match: Mapping[str, str] | None = None,
        msg_id: str | None = None,
        correl_id: str | None = None,
        group_id: str | None = None,
        mode: str | None = None,
        commit_first: bool = False,
        connection: Connection | str | None = None,
        access: str | None = None,
        syncpoint: str | None = None,
    ) -> Any:
        """Get from a queue, waiting up to ``wait`` seconds for a message.

        Without ``batch``: the :class:`Message`, or None when there is none. With ``batch=n``:
        a :class:`Batch` (list) of up to n messages with the server's ``reason`` when empty.
        ``match`` (or msg_id/correl_id/group_id) selects; ``mode`` is ``"destructive"``
        (default), ``"browse"`` or ``"peek_lock"`` (messages then carry a ``receipt``);
        ``preemptive`` (needs a unit of work) may take another unit of work's uncommitted put;
        ``commit_first`` commits the ``connection``'s unit of work first; ``access`` is
        ``"shared"`` or ``"exclusive"``."""
        # each body once (text when it is UTF-8, else base64): Message.from_json makes the other
        options: dict[str, Any] = {"wait": wait, "bodies": "one"}
        selectors = dict(match or {})
        selectors.update(
            {k: v for k, v in (("msg_id", msg_id), ("correl_id", correl_id), ("group_id", group_id)) if v is not None}
        )
        options.update(selectors)
        if batch is not None:
            options["batch"] = batch
        if ordered is not None:
            options["ordered"] = ordered
        for name, value in (
            ("transaction", _id(transaction)),
            ("connection", _id(connection)),
            ("mode", mode),
            ("access", access),
            ("syncpoint", syncpoint),
        ):
            if value is not None:
                options[name] = value
        if preemptive:
            options["preemptive"] = True
        if commit_first:
            options["commit_first"] = True
        data = self._operation(
            "get",
            {"broker": broker, "queue": queue, **options},
            "POST",
            self._queue_path(broker, queue) + "get/",
            body=options,
            wait=wait,
        )
        txn = data.get("transaction")
        messages = [Message.from_json(m, client=self, transaction=txn) for m in data.get("messages", [])]
        if batch is None:
            return messages[0] if messages else None
        return Batch(messages, reason=data.get("reason"), transaction=txn)

    def browse_page(
        self, broker: str, queue: str, *, cursor: str | None = None, limit: int = 50, ordered: bool = False
    ) -> tuple[list[Message], str | None]:
        """One page of a browse: (messages, next cursor)."""
        params: dict[str, Any] = {"limit": limit}
        if cursor:
            params["cursor"] = cursor
        fields = {"broker": broker, "queue": queue, **params}
        if ordered:
            params["ordered"], fields["ordered"] = "true", True
        data = self._operation("browse", fields, "GET", self._queue_path(broker, queue) + "messages/", params=params)
        return [Message.from_json(m, client=self) for m in data.get("messages", [])], data.get("cursor") or cursor

    def browse(
        self,
        broker: str,
        queue: str,
        *,
        cursor: str | None = None,
        ordered: bool = False,
        page_size: int = 50,
        follow: bool = False,
        poll_interval: float = 1.0,
        follow_timeout: float | None = None,
    ) -> Browser:
        """Iterate over the queue's messages without removing them (``for m in client.browse(b, q)``).
        With ``follow=True`` keep polling for new arrivals (up to ``follow_timeout`` seconds)."""
        return Browser(
            self,
            broker,
            queue,
            cursor=cursor,
            ordered=ordered,
            page_size=page_size,
            follow=follow,
            poll_interval=poll_interval,
            follow_timeout=follow_timeout,
        )

    def lock(self, token: str) -> Lock:
        """A peek-lock receipt from its token (e.g. one kept elsewhere)."""
        return Lock(self, token)

    # -- units of work -------------------------------------------------------------------
    def transaction(self, broker: str, *, timeout_ms: int | None = None, commit_wait: float = 0) -> Transaction:
        """Begin a unit of work on ``broker``. Use it as a context manager to commit on exit
        (waiting up to ``commit_wait`` seconds for a held commit) or roll back on an exception."""
        body = {"timeout_ms": timeout_ms} if timeout_ms is not None else {}
        data = self._operation(
            "begin", {"broker": broker, **body}, "POST", self._broker_path(broker) + "transactions/", body=body
        )
        return Transaction(self, data, commit_wait=commit_wait)

    begin = transaction

    def display_transaction(self, transaction_id: str) -> Transaction:
        """An existing unit of work by id (its state, reason, upstream and downstream)."""
        data = self._request("GET", f"/api/transactions/{quote(transaction_id, safe='')}/")
        return Transaction(self, data)

    def transaction_graph(self, broker: str) -> dict:
        """The broker's live transaction graph: ``{"broker", "nodes": [{id, broker, state,
        reason, ...}], "edges": [{upstream, downstream, resource}]}``."""
        return self._request("GET", self._broker_path(broker) + "transactions/graph/")

    # -- connections ---------------------------------------------------------------------
    def connect(self, broker: str, client_name: str) -> Connection:
        """Open a connection under ``client_name``; it reads back that name's last put and
        got msg_id. Use it as a context manager to close it on exit."""
        data = self._operation(
            "connect",
            {"broker": broker, "client_name": client_name},
            "POST",
            self._broker_path(broker) + "connections/",
            body={"client_name": client_name},
        )
        conn = Connection(self, data)
        conn.broker = conn.broker or broker
        return conn

    def display_connection(self, conn_id: str) -> Connection:
        return Connection(self, self._request("GET", f"/api/connections/{quote(conn_id, safe='')}/"))

    def close_stomp_connection(self, session: str) -> dict:
        """Close a STOMP connection, named by the ``session`` header of its CONNECTED frame:
        the process serving it sends its client an ERROR and drops it within seconds (its
        transactions rolled back, what it had not acknowledged given back). For its own
        user, a superuser or the broker's admins; anyone else gets NotFound, as for an
        unknown session. Returns ``{"session", "close_requested_at", "close_requested_by"}``."""
        return self._request("DELETE", f"/api/stomp-connections/{quote(session, safe='')}/")

    # -- publish/subscribe ---------------------------------------------------------------
    def publish(
        self,
        broker: str,
        topic: str,
        body: str | bytes | None = None,
        *,
        retain: bool = False,
        transaction: Transaction | str | None = None,
        **descriptor: Any,
    ) -> dict:
        """Publish on a topic string: a copy goes to every active subscription whose filter
        matches. ``retain`` keeps it as the topic's retained publication; under a
        ``transaction`` the copies are its uncommitted puts. ``descriptor``: message fields
        (priority, persistence, properties, ...). Returns ``{"msg_id", "topic", "matched",
        "retained", "held", "transaction"}``; a durable subscriber's full queue raises QueueFull."""
        payload = {**_message_json(body if body is not None else "", descriptor), "topic": topic, "retain": retain}
        if transaction is not None:
            payload["transaction"] = _id(transaction)
        return self._operation(
            "publish", {"broker": broker, **payload}, "POST", self._broker_path(broker) + "publish/", body=payload
        )

    def list_topics(self, broker: str) -> list[dict]:
        return self._all_pages(self._broker_path(broker) + "topics/")

    def define_topic(self, broker: str, name: str, topic_string: str, **attributes: Any) -> dict:
        """Define a topic object administering ``topic_string`` and below:
        conflation_interval_ms, durable_subscriptions, description."""
        return self._request(
            "POST",
            self._broker_path(broker) + "topics/",
            json={"name": name, "topic_string": topic_string, **attributes},
        )

    def display_topic(self, broker: str, name: str) -> dict:
        return self._request("GET", f"{self._broker_path(broker)}topics/{self._name(name)}/")

    def alter_topic(self, broker: str, name: str, **changes: Any) -> dict:
        return self._request("PATCH", f"{self._broker_path(broker)}topics/{self._name(name)}/", json=changes)

    def delete_topic(self, broker: str, name: str) -> None:
        self._request("DELETE", f"{self._broker_path(broker)}topics/{self._name(name)}/")

    def list_subscriptions(self, broker: str) -> list[dict]:
        return self._all_pages(self._broker_path(broker) + "subscriptions/")

    def subscribe(self, broker: str, name: str, topic_filter: str, queue: str, **options: Any) -> dict:
        """Define a subscription delivering to ``queue``: durable, activation_topic,
        deactivation_topic, new_publications_only. Returns it with ``active``."""
        return self._request(
            "POST",
            self._broker_path(broker) + "subscriptions/",
            json={"name": name, "topic_filter": topic_filter, "queue": queue, **options},
        )

    define_subscription = subscribe

    def display_subscription(self, broker: str, name: str) -> dict:
        return self._request("GET", f"{self._broker_path(broker)}subscriptions/{self._name(name)}/")

    def unsubscribe(self, broker: str, name: str) -> None:
        self._request("DELETE", f"{self._broker_path(broker)}subscriptions/{self._name(name)}/")

    delete_subscription = unsubscribe

    def retained(self, broker: str, topic_filter: str = "#") -> list[dict]:
        """The retained publications whose topics match ``topic_filter``."""
        return self._request("GET", self._broker_path(broker) + "retained/", params={"topic_filter": topic_filter})[
            "results"
        ]

    def clear_retained(self, broker: str, topic: str) -> None:
        self._request("DELETE", self._broker_path(broker) + "retained/", params={"topic": topic})

    # -- workflows -----------------------------------------------------------------------
    def _workflow_path(self, broker: str, name: str) -> str:
        return f"{self._broker_path(broker)}workflows/{self._name(name)}/"

    def list_workflows(self, broker: str) -> list[dict]:
        return self._all_pages(self._broker_path(broker) + "workflows/")

    def define_workflow(
        self, broker: str, name: str, steps: list[Mapping[str, Any]], *, deadline_ms: int = 0, description: str = ""
    ) -> dict:
        """Define a workflow: ``steps`` of ``{"name", "queue", "compensation_queue"}`` (and
        ``"next": [names]`` for fan-out and fan-in), run in the order listed by default."""
        return self._request(
            "POST",
            self._broker_path(broker) + "workflows/",
            json={"name": name, "steps": list(steps), "deadline_ms": deadline_ms, "description": description},
        )

    def display_workflow(self, broker: str, name: str) -> dict:
        return self._request("GET", self._workflow_path(broker, name))

    def alter_workflow(self, broker: str, name: str, **changes: Any) -> dict:
        """A new version (``steps``, ``deadline_ms``, ``description``); running instances keep theirs."""
        return self._request("PATCH", self._workflow_path(broker, name), json=changes)

    def delete_workflow(self, broker: str, name: str) -> None:
        self._request("DELETE", self._workflow_path(broker, name))

    def start_workflow(
        self,
        broker: str,
        name: str,
        body: str | bytes | None = None,
        *,
        transaction: Transaction | str | None = None,
        **descriptor: Any,
    ) -> dict:
        """Start an instance: its first step's request is ``body`` (with ``descriptor``'s
        message fields); under ``transaction`` it starts only if that unit of work commits.
        Returns ``{"id", "workflow", "version", "state", ...}``."""
        payload = _message_json(body if body is not None else "", descriptor)
        if transaction is not None:
            payload["transaction"] = _id(transaction)
        return self._operation(
            "workflow_start",
            {"broker": broker, "name": name, **payload},
            "POST",
            self._workflow_path(broker, name) + "instances/",
            body=payload,
        )

    def find_instances(
        self,
        broker: str,
        name: str,
        *,
        state: str | None = None,
        older_than_ms: int | None = None,
        step: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> dict:
        """``{"count", "results"}``: the workflow's instances, newest first, by state, age
        and the step they stand at."""
        params = {
            k: v
            for k, v in {
                "state": state,
                "older_than_ms": older_than_ms,
                "step": step,
                "limit": limit,
                "offset": offset,
            }.items()
            if v is not None
        }
        return self._request("GET", self._workflow_path(broker, name) + "instances/", params=params)

    def display_instance(self, instance: str) -> dict:
        """An instance with its steps, held links, compensation path and history."""
        return self._operation(
            "workflow_instance", {"instance": instance}, "GET", f"/api/workflow-instances/{instance}/"
        )

    def _step_operation(
        self, op: str, action: str, instance: str, step: str, payload: dict, *, commit: bool = False, wait: float = 0
    ) -> dict:
        if commit:
            payload["commit"] = True
            if wait:
                payload["wait"] = wait
        return self._operation(
            op,
            {"instance": instance, "step": step, **payload},
            "POST",
            f"/api/workflow-instances/{instance}/steps/{self._name(step)}/{action}/",
            body=payload,
            wait=wait,
        )

    def complete_step(
        self,
        instance: str,
        step: str,
        transaction: Transaction | str,
        *,
        output: Any = None,
        compensation: Any = None,
        commit: bool = False,
        wait: float = 0,
    ) -> dict:
        """Complete a step in the unit of work that got its request: ``output`` (a body, or
        a dict of message fields) is the next step(s)' request, ``compensation`` this
        step's compensation request should the saga need it. Counts when it commits.

        ``commit``: commit the unit of work in the same call (one database transaction): the
        answer's ``state`` is ``committed``, or ``held`` while an upstream unit of work it took
        a request from pre-emptively is open (the call waits up to ``wait`` seconds for it)."""
        payload: dict[str, Any] = {"transaction": _id(transaction)}
        if output is not None:
            payload["output"] = _message_json(output, {})
        if compensation is not None:
            payload["compensation"] = _message_json(compensation, {})
        return self._step_operation("step_complete", "complete", instance, step, payload, commit=commit, wait=wait)

    def complete_steps(
        self,
        transaction: Transaction | str,
        steps: list[dict],
        *,
        commit: bool = False,
        wait: float = 0,
        nowait: bool = False,
    ) -> Any:
        """Complete several steps in the unit of work that got their requests, all or none, in
        one call (one database transaction on the server): ``steps`` are dicts with
        ``instance``, ``step`` and optionally ``output`` and ``compensation`` (as
        :meth:`complete_step` takes them). ``commit``: commit the unit of work in the same
        call. The answer's ``steps`` say each one's state, in the order given.

        ``nowait`` (without ``commit``): send the call and return a :class:`PendingReply` at
        once. Over a session the server applies it before the calls sent after it: the next
        requests are then put (uncommitted: a pre-emptive get may take them) while the caller
        goes on with its unit of work. Read its ``result()`` before committing: completions
        refused are not done, and a commit would consume their requests."""
        if commit and nowait:
            raise ValueError("A call that commits waits for its answer: nowait is for one that does not.")
        payload: dict[str, Any] = {"transaction": _id(transaction), "steps": []}
        for item in steps:
            completion = {"instance": item["instance"], "step": item["step"]}
            for key in ("output", "compensation"):
                if item.get(key) is not None:
                    completion[key] = _message_json(item[key], {})
            payload["steps"].append(completion)
        if commit:
            payload["commit"] = True
            if wait:
                payload["wait"] = wait
        return self._operation(
            "steps_complete", payload, "POST", "/api/workflow-steps/complete/", body=payload, wait=wait, nowait=nowait
        )

    def fail_step(
        self, instance: str, step: str, reason: str = "", *, transaction: Transaction | str | None = None
    ) -> dict:
        """The step failed: the instance fails and compensation begins (under
        ``transaction``: when it commits)."""
        payload: dict[str, Any] = {"reason": reason}
        if transaction is not None:
            payload["transaction"] = _id(transaction)
        return self._step_operation("step_fail", "fail", instance, step, payload)

    def step_compensated(
        self, instance: str, step: str, transaction: Transaction | str, *, commit: bool = False, wait: float = 0
    ) -> dict:
        """The step's compensation is done when ``transaction`` (which got its compensation
        request) commits; ``commit``: commit it in the same call."""
        return self._step_operation(
            "step_compensated",
            "compensated",
            instance,
            step,
            {"transaction": _id(transaction)},
            commit=commit,
            wait=wait,
        )

    def abort_instance(self, instance: str, reason: str = "") -> dict:
        """Abort: steps in flight back out, committed steps are compensated, newest first."""
        return self._operation(
            "workflow_abort",
            {"instance": instance, "reason": reason},
            "POST",
            f"/api/workflow-instances/{instance}/abort/",
            body={"reason": reason},
        )

    def resubmit_compensation(self, instance: str) -> dict:
        """Put a failed compensation's request again."""
        return self._operation(
            "workflow_resubmit",
            {"instance": instance},
            "POST",
            f"/api/workflow-instances/{instance}/resubmit/",
            body={},
        )

"""One STOMP connection, whatever carries it (TCP or WebSocket): the protocol's state
machine (docs/api.md, "STOMP"; docs/stomp.md).

- The transport's event loop only reads and writes: it feeds bytes to the frame parser,
  queues the frames, writes frames and heart-beats, and watches the client's heart-beats.
- A task on the STOMP pool (``pool``, at most ``BATON_STOMP_THREADS`` threads per process)
  applies the connection's frames in the order received, through the engine's operations
  (``engine``), with the connection's user, and gives its thread back when there are none.
- Each subscription's pump, a pool task too, gets messages as they arrive while it has fewer
  than ``prefetch-count`` unacknowledged and the client reads what it is sent; while it
  waits it holds no thread: the queue's wake-ups (``wakeup_watch``), room made, and a timer
  on the event loop submit it again.
- A pre-emptive subscription (``x-baton-preemptive:true``) gets, while the connection has an
  open transaction, under the most recently begun one: destructive pre-emptive gets in its
  unit of work, which COMMIT consumes (held until the producers commit) and ABORT gives back.
- A refused frame gets ERROR (``message`` header, a body a person understands,
  ``receipt-id`` when it asked for a receipt) and the connection closes. However it ends,
  its open transactions are rolled back, the messages it was sent but did not acknowledge
  are available again, and its non-durable topic subscriptions are removed.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import queue
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import close_old_connections

from baton_client.errors import UnsettledDeliveries
from config.errors import (
    BatonError,
    Conflict,
    InvalidInput,
    MessageTooLarge,
    NotAuthenticated,
    NotFound,
    Throttled,
)
from transactions.wakeups import wakeup_notify

from . import engine
from .frames import Frame, FrameError, FrameParser, FrameTooLarge, frame_encode
from .headers import message_fields
from .pool import stomp_pool
from .registry import registry_started
from .state import HIGH_WATER, HeldCommit, Pending, Subscription, Txn
from .waiting import Waiting

log = logging.getLogger(__name__)

VERSIONS = ("1.0", "1.1", "1.2")
ACK_MODES = ("auto", "client", "client-individual")
SERVER = "Baton/0.1"
#: Frames a connection applies before letting the pool's other tasks have a turn.
DRAIN_TURN = 64
_CLOSE = object()


def _joined(items: list[Any]) -> list[Any]:
    """``items`` with each run of frames (bytes) joined into one."""
    out: list[Any] = []
    run: list[bytes] = []
    for item in items:
        if isinstance(item, bytes):
            run.append(item)
            continue
        if run:
            out.append(b"".join(run) if len(run) > 1 else run[0])
            run = []
        out.append(item)
    if run:
        out.append(b"".join(run) if len(run) > 1 else run[0])
    return out


@dataclass(frozen=True)
class _Unflushed:
    """Bytes the transport took but has not sent yet: the writer waits for them."""

    size: int


_NOTHING = object()
_ids = itertools.count(1)
#: Live connections of this process (the dashboard's section reads them through the registry).
LIVE: dict[str, StompConnection] = {}
#: Connections of this process that have not yet ended (given back what they held): gone
#: from LIVE when their transport ends, here until their end has been applied.
UNENDED: set[StompConnection] = set()


class StompRefused(InvalidInput):
    """The frame was refused."""


class UnknownDestination(NotFound):
    """No such destination."""


class LimitReached(Conflict):
    """A bound of the STOMP server was reached (config/settings/stomp.py)."""


class TooManyConnections(Throttled):
    """The server holds as many connections as it may."""


class ConnectTimedOut(NotAuthenticated):
    """CONNECT did not come in time."""


#: Held while a CONNECT counts its user's connections and joins them.
_SIGNING_IN = threading.Lock()


#: A COMMIT of a transaction that holds pre-emptive deliveries not acknowledged under it.
Unsettled = UnsettledDeliveries


def version_negotiated(frame: Frame) -> str | None:
    """The highest version both sides speak (1.0 when the client names none), or None."""
    offered = frame.get("accept-version")
    if offered is None:
        return "1.0"
    common = [v for v in VERSIONS if v in {x.strip() for x in offered.split(",")}]
    return common[-1] if common else None


def heart_beats(frame: Frame, *, server_ms: int) -> tuple[int, int]:
    """(ms between the server's heart-beats, ms within which the client's must come), as
    the specification negotiates them; 0 = none."""
    value = frame.get("heart-beat", "0,0")
    cx, _, cy = value.partition(",")
    if not (cx.isascii() and cy.isascii() and cx.strip().isdigit() and cy.strip().isdigit()):
        raise StompRefused(
            f"The heart-beat header must be two whole numbers, not {value[:40]!r}.",
            errors={"heart-beat": ["Must be cx,cy."]},
        )
    cx_ms, cy_ms = int(cx), int(cy)
    send = 0 if not server_ms or not cy_ms else max(server_ms, cy_ms)
    receive = 0 if not server_ms or not cx_ms else max(server_ms, cx_ms)
    return send, receive


class StompConnection(Waiting):
    """The protocol of one connection. The transport calls :meth:`start`, then for its bytes
    :meth:`received` (awaiting it: that is the back-pressure) or :meth:`received_nowait`
    (when it answers False, the transport reads no more until ``room`` is set), and
    :meth:`lost` when it ends; the connection writes through ``transport.write_nowait(data)`` (whether
    it all went at once; None when the transport cannot write without awaiting),
    ``transport.drain()`` and ``transport.write(data)`` (coroutines), joining frames sent
    together into one write where ``transport.joins_frames`` (a byte stream), and ends it with
    ``transport.close()`` (a coroutine, after what was sent) or ``transport.abort()`` (at
    once)."""

    def __init__(self, transport, *, kind: str, peer: str, address: str = "", version: str | None = None) -> None:
        self.transport = transport
        self.kind = kind
        self.peer = peer
        self.address = address  # the client's IP address (sign-ins are throttled by it)
        self.session = uuid.uuid4().hex
        self.parser = FrameParser(max_frame=settings.BATON_STOMP_MAX_FRAME, version=version)
        self.ws_version = version  # a WebSocket subprotocol fixes the version
        self.version = version or "1.0"
        self.user = None
        self.broker: str | None = None
        self.connected_at = time.time()
        self.subscriptions: dict[str, Subscription] = {}
        self.transactions: dict[str, Txn] = {}
        self.acks: dict[str, Pending] = {}
        self.ack_ids = itertools.count(1)
        self.lock = threading.Condition()
        self.begin_lock = threading.Lock()  # a transaction's unit of work is begun once
        self.unsent = 0
        self.closed = False  # no more frames are read or sent
        self.failed = False  # an ERROR was sent: the frames after it are dropped
        self.stopped_reading = False  # the bytes were not STOMP: nothing more is read
        self.inbox: queue.SimpleQueue = queue.SimpleQueue()
        self.pending_frames = 0
        self.reading_paused = False  # ``room`` was cleared: the client's bytes wait
        self.last_received = self.last_sent = time.monotonic()
        self.heartbeat_send = self.heartbeat_receive = 0
        #: COMMITs held until their upstream units of work commit (each waiting without a thread).
        self.held: list[HeldCommit] = []
        #: The connection's frames are being applied by a pool thread (or are submitted to be).
        self.scheduled = False
        #: Set once the connection has ended and given back what it held.
        self.ended = threading.Event()

    # --- the event loop's side ------------------------------------------------------------

    def start(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.outbox: asyncio.Queue = asyncio.Queue()
        #: Frames (and the close) sent by the connection's threads, for the loop's next flush.
        self.outgoing: list[Any] = []
        self.flush_due = False
        self.writing = False  # the writer task is writing (or waiting for) a frame
        self.room = asyncio.Event()
        self.room.set()
        self.writer = self.loop.create_task(self._write())
        self.heartbeats: asyncio.Task | None = None
        full = len(LIVE) >= settings.BATON_STOMP_MAX_CONNECTIONS
        LIVE[self.session] = self
        UNENDED.add(self)
        if settings.BATON_STOMP_REGISTRY:
            registry_started(LIVE)
        if full:
            self._refused_now(
                TooManyConnections(
                    f"The server holds the most connections it may ({settings.BATON_STOMP_MAX_CONNECTIONS}, "
                    "BATON_STOMP_MAX_CONNECTIONS); try again later.",
                    retry_after=1,
                )
            )
            return
        self.connect_timer = self.loop.call_later(settings.BATON_STOMP_CONNECT_TIMEOUT_S, self._connect_timed_out)

    def _refused_now(self, exc: BatonError) -> None:
        """ERROR and close, whatever comes next (in order, after what was received)."""
        self.stopped_reading = True
        with self.lock:
            self.pending_frames += 1
        self.inbox.put(exc)
        self._schedule()

    def _connect_timed_out(self) -> None:
        if self.user is None and not self.closed and not self.stopped_reading:
            self._refused_now(
                ConnectTimedOut(
                    f"No CONNECT within {settings.BATON_STOMP_CONNECT_TIMEOUT_S:g} s "
                    "(BATON_STOMP_CONNECT_TIMEOUT_S): the connection is closed."
                )
            )

    async def received(self, data: bytes) -> None:
        if not self.received_nowait(data):
            await self.room.wait()

    def received_nowait(self, data: bytes) -> bool:
        """Take the client's bytes; whether it may send more now (else once ``self.room``
        is set: the connection's thread has fallen behind)."""
        self.last_received = time.monotonic()
        if self.stopped_reading or self.closed:
            return True
        items: list[Frame | BatonError] = []
        try:
            self.parser.push(data)
            while (frame := self.parser.pop()) is not None:
                if frame.command in ("CONNECT", "STOMP") and self.ws_version is None and self.parser.version is None:
                    # later frames are read in the version agreed (decided here, before them)
                    self.parser.version = version_negotiated(frame) or "1.2"
                items.append(frame)
        except FrameTooLarge as exc:
            items.append(MessageTooLarge(str(exc), max_frame=settings.BATON_STOMP_MAX_FRAME))
            self.stopped_reading = True
        except FrameError as exc:
            items.append(StompRefused(f"Not a STOMP frame: {exc}"))
            self.stopped_reading = True
        if not items:
            return not self.reading_paused
        with self.lock:
            self.pending_frames += len(items)
            # the connection's thread sets ``room`` again once it has caught up (and only
            # then wakes the loop for it: not once per frame)
            if self.pending_frames >= settings.BATON_STOMP_MAX_PENDING:
                self.reading_paused = True
            paused = self.reading_paused
        if paused:
            self.room.clear()
        for item in items:
            self.inbox.put(item)
        self._schedule()
        return not paused

    def lost(self) -> None:
        """The transport ended (the client left, or the server closed it). On the loop."""
        if getattr(self, "_lost", False):
            return
        self._lost = True
        self.closed = True
        if getattr(self, "connect_timer", None) is not None:
            self.connect_timer.cancel()
        LIVE.pop(self.session, None)
        with self.lock:
            self.lock.notify_all()
        self.inbox.put(None)
        self._schedule()
        if self.heartbeats is not None:
            self.heartbeats.cancel()
        self.room.set()  # whatever waits to read more stops waiting: there is no more
        self.outbox.put_nowait(_CLOSE)

    def _flush(self) -> None:
        """Write what the connection's threads sent since the last flush (one wake-up of the
        loop for all of it). A frame the transport takes at once is written here; the writer
        task (:meth:`_write`) takes the rest, in order: what is behind a frame still being
        written, what the transport could not take whole, and the close."""
        with self.lock:
            items, self.outgoing = self.outgoing, []
            self.flush_due = False
        if self.transport.joins_frames:  # a byte stream: the frames of one flush in one write
            items = _joined(items)
        for item in items:
            if item is _CLOSE or self.closed or self.writing or not self.outbox.empty():
                self.outbox.put_nowait(item)
                continue
            self.last_sent = time.monotonic()
            try:
                flushed = self.transport.write_nowait(item)
            except (OSError, RuntimeError, ConnectionError) as exc:
                self._write_failed(exc)
                return
            if flushed is None:  # the transport writes only by awaiting
                self.outbox.put_nowait(item)
            elif flushed:
                self._written(len(item))
            else:  # taken, not yet sent: the writer waits until it is (or the time is up)
                self.outbox.put_nowait(_Unflushed(len(item)))

    def _written(self, size: int) -> None:
        with self.lock:
            was = self.unsent
            self.unsent -= size
            self.lock.notify_all()
            if not (was >= HIGH_WATER > self.unsent):
                return
            subs = list(self.subscriptions.values())
        for sub in subs:  # the client has read enough: the subscriptions get again
            self._kick(sub)

    def _write_failed(self, exc: BaseException) -> None:
        log.info("closing a STOMP connection: a frame could not be sent (%s)", type(exc).__name__)
        self.closed = True
        self.transport.abort()

    async def _write(self) -> None:
        while True:
            item = await self.outbox.get()
            if item is _CLOSE:
                self.closed = True
                try:
                    await self.transport.close()
                except Exception:  # already gone
                    pass
                return
            self.writing = True
            try:
                self.last_sent = time.monotonic()
                async with asyncio.timeout(settings.BATON_STOMP_SEND_TIMEOUT_S):
                    if isinstance(item, _Unflushed):
                        await self.transport.drain()
                    else:
                        await self.transport.write(item)
            except (TimeoutError, OSError, RuntimeError, ConnectionError) as exc:
                self._write_failed(exc)
                return
            finally:
                self.writing = False
                self._written(item.size if isinstance(item, _Unflushed) else len(item))

    async def _heartbeat(self) -> None:
        send_s, receive_s = self.heartbeat_send / 1000, self.heartbeat_receive / 1000
        # the margin the specification suggests, generous: a false timeout is the most
        # reported client problem; any bytes received count as life
        grace_s = receive_s * 2 + 1 if receive_s else 0
        while not self.closed:
            now = time.monotonic()
            due = []
            if send_s:
                if now - self.last_sent >= send_s and self.outbox.empty():
                    self.last_sent = now
                    with self.lock:
                        self.unsent += 1
                    self.outbox.put_nowait(b"\n")
                due.append(self.last_sent + send_s)
            if grace_s:
                if now - self.last_received > grace_s:
                    log.info("closing a STOMP connection: no heart-beat from the client for %.1f s", grace_s)
                    self.closed = True
                    self.outbox.put_nowait(_CLOSE)
                    return
                due.append(self.last_received + grace_s)
            await asyncio.sleep(max(0.01, min(due) - time.monotonic()))

    # --- sending (from any thread) ------------------------------------------------------------

    def send(self, frame: Frame) -> None:
        data = frame_encode(frame, version=self.version)
        with self.lock:
            if self.closed:
                return
            self.unsent += len(data)
            over = self.unsent > settings.BATON_STOMP_SEND_BUFFER
            if over:
                self.closed = True
                self.lock.notify_all()
            else:
                wake = self._outgoing_add(data)
        if over:  # the client does not read what it asked for: cut it off, it holds up no one
            log.info("closing a STOMP connection: more than %d bytes unread", settings.BATON_STOMP_SEND_BUFFER)
            self.loop.call_soon_threadsafe(self.transport.abort)
            return
        if wake:
            self.loop.call_soon_threadsafe(self._flush)

    def _outgoing_add(self, item: Any) -> bool:
        """Add to what the next flush writes (under ``self.lock``); whether the loop must be
        woken for it (no flush is due yet)."""
        self.outgoing.append(item)
        wake, self.flush_due = not self.flush_due, True
        return wake

    def close_after_sending(self) -> None:
        with self.lock:
            wake = self._outgoing_add(_CLOSE)
        if wake:
            self.loop.call_soon_threadsafe(self._flush)

    def error(self, exc: BatonError, frame: Frame | None) -> None:
        """ERROR, then close (the specification's rule)."""
        if self.failed and frame is not None:
            return
        self.failed = True
        message = exc.message.splitlines()[0][:200] if exc.message else exc.code
        headers = [("message", message), ("x-baton-code", exc.code), ("content-type", "text/plain")]
        if frame is not None and frame.get("receipt") is not None:
            headers.append(("receipt-id", frame.get("receipt")))
        if "version" in exc.details:  # the versions the server speaks (the specification's rule)
            headers.append(("version", str(exc.details["version"])))
        details = [f"{k}: {v}" for k, v in exc.details.items() if k != "errors"]
        for name, texts in (exc.details.get("errors") or {}).items():
            details.append(f"{name}: {' '.join(texts) if isinstance(texts, list) else texts}")
        body = exc.message + ("\n" + "\n".join(details) if details else "")
        if frame is not None:
            body += f"\n(refused frame: {frame.command})"
        if not self.closed:
            try:
                self.send(Frame("ERROR", headers, body.encode("utf-8")))
            except FrameError:  # an unwritable value (1.0): the message alone
                self.send(Frame("ERROR", [("message", "The frame was refused.")], body.encode("utf-8")))
            self.close_after_sending()

    def receipt(self, frame: Frame) -> None:
        receipt = frame.get("receipt")
        if receipt is not None:
            self.send(Frame("RECEIPT", [("receipt-id", receipt)]))

    # --- the connection's thread ----------------------------------------------------------

    def _schedule(self) -> None:
        """Have a pool thread apply what is in the inbox (unless one is at it already)."""
        with self.lock:
            if self.scheduled:
                return
            self.scheduled = True
        stomp_pool().submit(self._drain)

    def _drain(self) -> None:
        """Apply the frames received, in order, then give the thread back (a connection
        holds no thread while it waits for frames). After ``DRAIN_TURN`` frames it lets other
        connections have a turn."""
        if self.ended.is_set():
            return
        held: Any = _NOTHING  # a frame taken while gathering a batch, applied next
        turn = 0
        while True:
            if held is not _NOTHING:
                item, held = held, _NOTHING
            else:
                try:
                    item = self.inbox.get_nowait()
                except queue.Empty:
                    with self.lock:
                        if self.inbox.empty():
                            self.scheduled = False
                            return
                    continue
            if item is None:
                self._end()
                return
            applied = [item]
            try:
                if self.failed and not isinstance(item, BatonError):
                    continue
                if isinstance(item, ConnectTimedOut) and self.user is not None:
                    continue  # CONNECT came (and was applied) before the time ran out
                if isinstance(item, BatonError):
                    self.error(item, None)
                    continue
                if self._batchable(item):
                    held = self._gathered(applied)
                    self._send_batch(applied)
                else:
                    self._apply(item)
            except BatonError as exc:
                self.error(exc, applied[-1])
            except Exception:
                log.exception("a STOMP frame failed")
                close_old_connections()
                self.error(BatonError("The server failed to handle the frame."), applied[-1])
            finally:
                with self.lock:
                    self.pending_frames -= len(applied)
                    resume = self.reading_paused and self.pending_frames <= settings.BATON_STOMP_MAX_PENDING // 2
                    if resume:
                        self.reading_paused = False
                if resume:  # after the loop's clear(): the loop runs this after that callback
                    self.loop.call_soon_threadsafe(self.room.set)
            turn += len(applied)
            if turn >= DRAIN_TURN and held is _NOTHING:
                stomp_pool().submit(self._drain)  # still scheduled: the next turn goes on
                return

    def _end(self) -> None:
        try:
            self._ended()
        except Exception:
            log.exception("ending a STOMP connection failed")
        finally:
            UNENDED.discard(self)
            self.ended.set()

    # --- SENDs in a transaction, pipelined: one put of them all --------------------------

    def _batchable(self, frame: Any) -> bool:
        return (
            isinstance(frame, Frame)
            and frame.command == "SEND"
            and self.user is not None
            and frame.get("transaction") is not None
            and (frame.get("destination") or "").startswith("/queue/")
        )

    def _gathered(self, batch: list[Frame]) -> Any:
        """Add to ``batch`` the SENDs already received right after its first, to the same
        queue in the same transaction (up to one with a receipt); return the frame that
        ended the batch (to apply next), or _NOTHING. They become one put: under a unit of
        work nothing is visible before COMMIT either way, and a refusal rolls it all back."""
        first = batch[0]
        while len(batch) < settings.BATON_MAX_BATCH and batch[-1].get("receipt") is None:
            try:
                following = self.inbox.get_nowait()
            except queue.Empty:
                return _NOTHING
            if not (
                self._batchable(following)
                and following.get("destination") == first.get("destination")
                and following.get("transaction") == first.get("transaction")
            ):
                return following
            batch.append(following)
        return _NOTHING

    def _send_batch(self, batch: list[Frame]) -> None:
        if len(batch) == 1:
            self._send(batch[0])
            return
        _, name = self._destination(batch[0])
        txn = self._transaction(batch[0])
        messages = [(message_fields(frame), frame.body) for frame in batch]
        self._put_under(
            txn,
            lambda transaction, begin: engine.messages_send(
                self.user, broker=self.broker, queue=name, messages=messages, transaction=transaction, begin=begin
            ),
        )
        self.receipt(batch[-1])

    def _put_under(self, txn: Txn, put) -> None:
        """``put(transaction, begin)`` under ``txn``'s unit of work: begun by the put itself
        (one database transaction) when not begun yet."""
        with self.begin_lock:
            if txn.id is None:
                txn.id = put(None, True)
                return
        put(txn.id, False)

    def _begun(self, txn: Txn) -> str:
        """``txn``'s unit of work, begun now if it was not yet."""
        with self.begin_lock:
            if txn.id is None:
                txn.id = engine.transaction_begun(self.user, broker=self.broker)
            return txn.id

    def _apply(self, frame: Frame) -> None:
        command = frame.command
        if command in ("CONNECT", "STOMP"):
            self._connect(frame)
            return
        if self.user is None:
            raise NotAuthenticated("Send CONNECT (or STOMP) first.")
        handler = getattr(self, "_" + command.lower(), None)
        if handler is None or command in ("CONNECTED", "MESSAGE", "RECEIPT", "ERROR"):
            raise StompRefused(f"{command} is a frame the server sends, not one it receives.")
        handler(frame)

    def _required(self, frame: Frame, name: str) -> str:
        value = frame.get(name)
        if value is None or value == "":
            raise StompRefused(f"{frame.command} needs the {name} header.", errors={name: ["Required."]})
        return value

    def _connect(self, frame: Frame) -> None:
        if self.user is not None:
            raise StompRefused("Already connected.")
        version = self.ws_version or version_negotiated(frame)
        if version is None or (self.ws_version and version_negotiated(frame) is None):
            self.version = "1.2"
            raise StompRefused(f"Supported protocol versions are {' '.join(VERSIONS)}.", version=",".join(VERSIONS))
        self.version = version
        self.parser.version = version
        send_ms, receive_ms = (
            heart_beats(frame, server_ms=settings.BATON_STOMP_HEARTBEAT_MS) if version != "1.0" else (0, 0)
        )
        user = engine.user_signed_in(login=frame.get("login"), passcode=frame.get("passcode"), address=self.address)
        if user is None:
            raise NotAuthenticated("Bad login or passcode: login is a user name, passcode its password or API token.")
        broker = engine.broker_chosen(user, host=frame.get("host"))
        limit = settings.BATON_STOMP_MAX_CONNECTIONS_PER_USER
        with _SIGNING_IN:
            held = sum(1 for c in list(LIVE.values()) if c.user is not None and not c.closed and c.user.pk == user.pk)
            if held >= limit:
                raise TooManyConnections(
                    f"User {user.get_username()!r} has {held} connections open, the most one user may have "
                    f"({limit}, BATON_STOMP_MAX_CONNECTIONS_PER_USER); close one first.",
                    retry_after=1,
                )
            self.broker = broker
            self.user = user
        self.heartbeat_send, self.heartbeat_receive = send_ms, receive_ms
        headers = [("version", version), ("server", SERVER), ("session", self.session)]
        # on every version, 1.0 included (no heart-beats there: 0,0), as clients read it
        hb = settings.BATON_STOMP_HEARTBEAT_MS
        headers.append(("heart-beat", f"{hb if send_ms else 0},{hb if receive_ms else 0}"))
        self.send(Frame("CONNECTED", headers))
        if send_ms or receive_ms:
            self.loop.call_soon_threadsafe(self._start_heartbeats)

    def _start_heartbeats(self) -> None:
        if not self.closed:
            self.heartbeats = self.loop.create_task(self._heartbeat())

    # --- destinations -------------------------------------------------------------------

    def _destination(self, frame: Frame) -> tuple[str, str]:
        destination = self._required(frame, "destination")
        for kind in ("queue", "topic"):
            prefix = f"/{kind}/"
            if destination.startswith(prefix) and len(destination) > len(prefix):
                return kind, destination[len(prefix) :]
        raise UnknownDestination(
            f"Unknown destination {destination[:100]!r}: use /queue/{{queue}} or /topic/{{topic string}}.",
            destination=destination[:100],
        )

    def _transaction(self, frame: Frame) -> Txn | None:
        name = frame.get("transaction")
        if name is None:
            return None
        txn = self.transactions.get(name)
        if txn is None:
            raise StompRefused(
                f"No transaction {name[:100]!r} is open on this connection (BEGIN it first).", transaction=name[:100]
            )
        return txn

    def _send(self, frame: Frame) -> None:
        kind, name = self._destination(frame)
        txn = self._transaction(frame)
        fields = message_fields(frame)
        if kind == "queue" and txn is not None:
            self._put_under(
                txn,
                lambda transaction, begin: engine.message_send(
                    self.user,
                    broker=self.broker,
                    queue=name,
                    fields=fields,
                    body=frame.body,
                    transaction=transaction,
                    begin=begin,
                ),
            )
        elif kind == "queue":
            engine.message_send(
                self.user, broker=self.broker, queue=name, fields=fields, body=frame.body, transaction=None
            )
        else:
            engine.publication_send(
                self.user,
                broker=self.broker,
                topic=name,
                fields=fields,
                body=frame.body,
                transaction=self._begun(txn) if txn else None,
            )
        self.receipt(frame)

    # --- subscriptions ------------------------------------------------------------------

    def _subscribe(self, frame: Frame) -> None:
        kind, name = self._destination(frame)
        limit = settings.BATON_STOMP_MAX_SUBSCRIPTIONS
        if len(self.subscriptions) >= limit:
            raise LimitReached(
                f"This connection has {len(self.subscriptions)} subscriptions, the most one connection may have "
                f"({limit}, BATON_STOMP_MAX_SUBSCRIPTIONS); UNSUBSCRIBE one first.",
                limit=limit,
            )
        sub_id = frame.get("id")
        if sub_id is None or sub_id == "":
            if self.version != "1.0":
                raise StompRefused("SUBSCRIBE needs an id header.", errors={"id": ["Required."]})
            sub_id = frame.get("destination")
        if sub_id in self.subscriptions:
            raise StompRefused(
                f"This connection already has a subscription with id {sub_id[:100]!r}.", subscription=sub_id[:100]
            )
        ack = frame.get("ack", "auto")
        if ack not in ACK_MODES:
            raise StompRefused(
                f"ack must be auto, client or client-individual, not {ack[:40]!r}.", errors={"ack": ["Invalid choice."]}
            )
        prefetch_text = frame.get("prefetch-count", "100")
        if not (prefetch_text.isascii() and prefetch_text.isdigit() and 1 <= int(prefetch_text) <= 10_000):
            raise StompRefused(
                f"prefetch-count must be a whole number from 1 to 10000, not {prefetch_text[:40]!r}.",
                errors={"prefetch-count": ["Out of range."]},
            )
        preemptive = frame.get("x-baton-preemptive", "false")
        if preemptive not in ("true", "false"):
            raise StompRefused(
                f"x-baton-preemptive must be true or false, not {preemptive[:40]!r}.",
                errors={"x-baton-preemptive": ["Must be true or false."]},
            )
        if preemptive == "true" and ack == "auto":
            raise StompRefused(
                "A pre-emptive subscription needs ack:client or ack:client-individual "
                "(its acknowledgements are transactional).",
                errors={"ack": ["Must not be auto."]},
            )
        durable = (
            frame.get("durable") == "true" or frame.get("persistent") == "true" or frame.get("auto-delete") == "false"
        )
        sub = Subscription(
            id=sub_id,
            destination=frame.get("destination"),
            broker=self.broker,
            queue=name,
            ack=ack,
            prefetch=int(prefetch_text),
            key="",
            preemptive=preemptive == "true",
        )
        if kind == "queue":
            sub.key, sub.lock_s, sub.queue_id = engine.queue_subscribed(self.user, broker=self.broker, queue=name)
        else:
            if durable and not frame.get("id"):
                raise StompRefused("A durable subscription needs an id header.", errors={"id": ["Required."]})
            sub.durable = durable
            sub.topic_name = engine.subscription_name(
                user=self.user, connection=self.session, id=sub_id, durable=durable
            )
            sub.key, sub.lock_s, sub.queue_id = engine.topic_subscribed(
                self.user, broker=self.broker, topic_filter=name, name=sub.topic_name, durable=durable
            )
            sub.queue = sub.topic_name
        self.subscriptions[sub_id] = sub
        self._watched(sub)
        self.receipt(frame)

    def _unsubscribe(self, frame: Frame) -> None:
        sub_id = frame.get("id")
        if (sub_id is None or sub_id == "") and self.version == "1.0":
            sub_id = frame.get("destination")
        if sub_id is None or sub_id == "":
            raise StompRefused("UNSUBSCRIBE needs an id header.", errors={"id": ["Required."]})
        sub = self.subscriptions.get(sub_id)
        if sub is None:
            raise StompRefused(
                f"No subscription with id {sub_id[:100]!r} on this connection.", subscription=sub_id[:100]
            )
        self._deferred_joined(sub)
        self._stop(sub)
        del self.subscriptions[sub_id]
        self._give_back(list(sub.pending.values()))
        if sub.topic_name and (not sub.durable or frame.get("durable") == "true" or frame.get("persistent") == "true"):
            engine.topic_unsubscribed(broker=sub.broker, name=sub.topic_name)
        self.receipt(frame)

    def _deferred_joined(self, sub: Subscription) -> None:
        """Before a subscription ends: the ACKs of its messages that wait for their
        transaction's COMMIT complete under its unit of work now (no thread renews their
        locks after this)."""
        for txn in list(self.transactions.values()):
            tokens = [item.token for item in txn.deferred if item.subscription is sub]
            if tokens:
                engine.locks_completed(self.user, tokens=tokens, transaction=self._begun(txn))
                txn.completed += tokens
                txn.deferred = [item for item in txn.deferred if item.subscription is not sub]

    # --- acknowledgements -----------------------------------------------------------------

    def _acknowledged(self, frame: Frame) -> list[Pending]:
        """The messages an ACK or NACK covers (in delivery order), or ERROR."""
        if self.version == "1.2":
            ack_id = self._required(frame, "id")
            with self.lock:
                pending = self.acks.get(ack_id)
            if pending is None:
                raise StompRefused(
                    f"{frame.command} of an unknown or already acknowledged message (id {ack_id[:100]!r}).",
                    id=ack_id[:100],
                )
        else:
            msg_id = self._required(frame, "message-id")
            sub_id = frame.get("subscription")
            if self.version == "1.1" and sub_id is None:
                raise StompRefused(
                    f"{frame.command} needs the subscription header.", errors={"subscription": ["Required."]}
                )
            subs = (
                [self.subscriptions[sub_id]]
                if sub_id in self.subscriptions
                else ([] if sub_id is not None else list(self.subscriptions.values()))
            )
            with self.lock:
                pending = next((s.pending[msg_id] for s in subs if msg_id in s.pending), None)
            if pending is None:
                raise StompRefused(
                    f"{frame.command} of an unknown or already acknowledged message (message-id {msg_id[:100]!r}).",
                    message_id=msg_id[:100],
                )
        sub = pending.subscription
        if sub.ack == "client-individual":
            return [pending]
        with self.lock:  # client: cumulative over the subscription's earlier messages
            covered = []
            for item in sub.pending.values():
                covered.append(item)
                if item is pending:
                    break
        return covered

    def _forget(self, covered: list[Pending]) -> None:
        with self.lock:
            for item in covered:
                item.subscription.pending.pop(item.msg_id, None)
                self.acks.pop(item.ack_id, None)
            self.lock.notify_all()
        self._room_made({item.subscription for item in covered})

    def _room_made(self, subs) -> None:
        """Messages of these subscriptions were acknowledged (or given back): room to get more."""
        for sub in subs:
            if sub.ack != "auto":
                self._kick(sub)

    def _preemptive_checked(self, frame: Frame, covered: list[Pending], txn: Txn | None) -> None:
        """A pre-emptive delivery is acknowledged under the transaction it was got under,
        or not at all (checked before anything is applied)."""
        for item in covered:
            if item.txn is not None and item.txn is not txn:
                raise StompRefused(
                    f"{frame.command} of message {item.msg_id} needs transaction:{item.txn.name[:100]}: it was "
                    "delivered pre-emptively under that transaction.",
                    transaction=item.txn.name[:100],
                )

    def _ack(self, frame: Frame) -> None:
        covered = self._acknowledged(frame)
        txn = self._transaction(frame)
        self._preemptive_checked(frame, covered, txn)
        if txn is not None:
            for item in covered:
                if item.txn is not None:  # got under it already: COMMIT consumes it
                    txn.acked.add(item.msg_id)
                else:  # completed at the COMMIT
                    txn.deferred.append(item)
        elif len(covered) == 1:
            engine.lock_completed(self.user, token=covered[0].token, transaction=None)
        else:  # all or none: one unit of work of its own
            own = engine.transaction_begun(self.user, broker=self.broker)
            try:
                for item in covered:
                    engine.lock_completed(self.user, token=item.token, transaction=own)
                engine.transaction_committed(self.user, transaction=own, wait=0)
            except BaseException:
                try:
                    engine.transaction_rolled_back(self.user, transaction=own)
                except BatonError:
                    pass
                raise
        self._forget(covered)
        self.receipt(frame)

    def _nack(self, frame: Frame) -> None:
        requeue = frame.get("requeue", "true")
        if requeue not in ("true", "false"):
            raise StompRefused(
                f"requeue must be true or false, not {requeue[:40]!r}.", errors={"requeue": ["Must be true or false."]}
            )
        covered = self._acknowledged(frame)
        txn = self._transaction(frame)
        self._preemptive_checked(frame, covered, txn)
        self._forget(covered)
        if txn is not None:  # given back when the transaction ends (requeue:false: dead-lettered at COMMIT)
            # (a pre-emptive delivery NACKed stays un-ACKed: COMMIT is refused, ABORT gives it back)
            tokens = [item.token for item in covered if item.txn is None]
            (txn.abandoned if requeue == "true" else txn.discarded).extend(tokens)
        elif requeue == "true":
            self._give_back(covered)
        else:
            self._dead_lettered([item.token for item in covered if item.token is not None])
        self.receipt(frame)

    def _dead_lettered(self, tokens: list[str]) -> None:
        """NACK with requeue:false: to the broker's dead-letter queue (RabbitMQ drops the
        message, or dead-letters it where the queue has a dead-letter exchange; a Baton
        broker always has its dead-letter queue)."""
        for token in tokens:
            engine.lock_dead_lettered(self.user, token=token, reason="NACK requeue:false (STOMP)")

    def _nacked_settled(self, txn: Txn) -> None:
        """After a COMMIT: what it NACKed is available again, or dead-lettered (requeue:false)."""
        self._give_back(txn.abandoned)
        self._dead_lettered(txn.discarded)

    def _give_back(self, items: list[Pending] | list[str]) -> None:
        """Make these locked messages available again (a lock already gone is no matter)."""
        for item in items:
            token = item if isinstance(item, str) else item.token
            if token is None:  # a pre-emptive delivery: its transaction's end decides
                continue
            try:
                engine.lock_abandoned(self.user, token=token)
            except BatonError:
                pass
        self._forget([item for item in items if isinstance(item, Pending) and item.txn is None])

    # --- transactions ---------------------------------------------------------------------

    def _begin(self, frame: Frame) -> None:
        name = self._required(frame, "transaction")
        if name in self.transactions:
            raise StompRefused(
                f"Transaction {name[:100]!r} is already open on this connection.", transaction=name[:100]
            )
        txn = Txn(name=name)  # its unit of work is begun when first needed
        with self.lock:
            self.transactions[name] = txn
        # pre-emptive subscriptions now get under it, uncommitted messages already there too
        wakeup_notify([sub.key for sub in list(self.subscriptions.values()) if sub.preemptive])
        self.receipt(frame)

    def _open_transaction(self, frame: Frame) -> Txn:
        name = self._required(frame, "transaction")
        txn = self.transactions.get(name)
        if txn is None:
            raise StompRefused(f"No transaction {name[:100]!r} is open on this connection.", transaction=name[:100])
        return txn

    def _ending(self, txn: Txn) -> None:
        """No more pre-emptive gets under ``txn``; those under way have sent their MESSAGEs."""
        with self.lock:
            txn.ending = True
            self.lock.wait_for(lambda: txn.getting == 0)

    def _settled(self, txn: Txn) -> None:
        """Forget its pre-emptive deliveries (the transaction's end consumed them or gave them back)."""
        with self.lock:
            for item in txn.delivered.values():
                item.subscription.pending.pop(item.msg_id, None)
                self.acks.pop(item.ack_id, None)
            self.lock.notify_all()
        self._room_made({item.subscription for item in txn.delivered.values()})

    def _commit(self, frame: Frame) -> None:
        txn = self._open_transaction(frame)
        self._ending(txn)
        unsettled = [msg_id for msg_id in txn.delivered if msg_id not in txn.acked]
        if unsettled:  # COMMIT would consume them: refused, and the rollback gives them back
            raise Unsettled(
                f"COMMIT of {txn.name[:100]!r} refused: {len(unsettled)} message(s) delivered pre-emptively under it "
                "were not acknowledged under it (NACKed, or not ACKed yet); it is rolled back and they are "
                "available again.",
                transaction=txn.name[:100],
                messages=" ".join(unsettled[:20]),
            )
        with self.lock:
            del self.transactions[txn.name]
        self._settled(txn)
        deferred = [item.token for item in txn.deferred]
        try:
            if txn.id is None:  # no unit of work: its acknowledgements, at once and durably (or none)
                if deferred:
                    engine.locks_completed(self.user, tokens=deferred, transaction=None)
                outcome = {"state": "committed"}
            else:
                if deferred:
                    engine.locks_completed(self.user, tokens=deferred, transaction=txn.id)
                    txn.completed += deferred
                outcome = engine.transaction_committed(self.user, transaction=txn.id, wait=0)
        except BatonError:
            self._give_back(list(dict.fromkeys(txn.completed + deferred + txn.abandoned + txn.discarded)))
            raise
        if outcome["state"] == "committed":
            self._nacked_settled(txn)
            self.receipt(frame)
            return
        # held until its upstream units of work commit: the RECEIPT when it resolves
        self._commit_held(txn, frame)

    def _abort(self, frame: Frame) -> None:
        txn = self._open_transaction(frame)
        self._ending(txn)
        with self.lock:
            del self.transactions[txn.name]
        try:
            if txn.id is not None:
                engine.transaction_rolled_back(self.user, transaction=txn.id)  # backed out already: no matter
        finally:  # then its deliveries are back, in their places, before the subscription gets again
            self._settled(txn)
        # what it acknowledged is available again, not left locked (docs/stomp.md)
        self._give_back(txn.completed + [item.token for item in txn.deferred] + txn.abandoned + txn.discarded)
        self.receipt(frame)

    def _disconnect(self, frame: Frame) -> None:
        self._end_all()
        self.receipt(frame)
        self.failed = True  # nothing after DISCONNECT is applied
        self.close_after_sending()

    # --- the end ----------------------------------------------------------------------------

    def _end_all(self) -> None:
        """Stop the subscriptions, roll back open transactions, give back what was not
        acknowledged, remove non-durable topic subscriptions."""
        subs = list(self.subscriptions.values())
        self.subscriptions.clear()
        for sub in subs:
            self._stop(sub)
        for txn in list(self.transactions.values()):
            with self.lock:
                del self.transactions[txn.name]
            self._settled(txn)
            try:
                if txn.id is not None:
                    engine.transaction_rolled_back(self.user, transaction=txn.id)
            except BatonError:
                pass
            self._give_back(txn.completed + [item.token for item in txn.deferred] + txn.abandoned + txn.discarded)
        for sub in subs:
            self._give_back(list(sub.pending.values()))
            if sub.topic_name and not sub.durable:
                try:
                    engine.topic_unsubscribed(broker=sub.broker, name=sub.topic_name)
                except BatonError:
                    pass

    def _ended(self) -> None:
        if self.user is not None:
            try:
                self._end_all()
            except Exception:
                log.exception("ending a STOMP connection failed")
        for held in list(self.held):
            self._held_done(held)

"""One STOMP connection, whatever carries it (TCP or WebSocket): the adapter between its
protocol (``machine``: frames in, actions out, no I/O), its transport (``tcp.py``,
``consumers.py``) and the engine's operations (``engine``) (docs/api.md, "STOMP";
docs/stomp.md, "How it is served").

- The transport's event loop only reads and writes: it feeds bytes to the frame parser and
  hands the frames to the connection's pump (``brokers/api/pump.py``, the same as a
  session's), which writes the frames sent back, in batches, and the heart-beats; it
  watches the client's heart-beats.
- A task on the STOMP pool (``pool``, at most ``BATON_STOMP_THREADS`` threads per process)
  applies the connection's frames in the order received: the machine says what each asks,
  this carries it out through the engine's operations with the connection's user, and the
  machine answers the outcome (RECEIPT, ERROR, CONNECTED). The task gives its thread back
  when there are no more frames.
- Each subscription's pump, a pool task too, gets messages as they arrive while it has fewer
  than ``prefetch-count`` unacknowledged and the client reads what it is sent; while it
  waits it holds no thread: the queue's wake-ups (``wakeup_watch``), room made, and a timer
  on the event loop submit it again (``waiting.py``).
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
import logging
import threading
import time
import uuid
from typing import Any

from django.conf import settings
from django.db import close_old_connections

from baton_client.errors import UnsettledDeliveries
from baton_client.errors import BatonError, MessageTooLarge, NotAuthenticated, Throttled
from transactions.wakeups import wakeup_notify
from transactions.durability import durability_deferred
from transactions.wal_sync import Ticket, wal_when_synced

from . import engine
from .frames import Frame, FrameError, FrameParser, FrameTooLarge, frame_encode
from brokers.api.pump import CLOSE, NOTHING, Pump

from .machine import (
    Abort,
    Ack,
    Begin,
    Close,
    Commit,
    Disconnect,
    Heartbeats,
    Nack,
    Put,
    Send,
    SignIn,
    StompMachine,
    StompRefused,
    Subscribe,
    Unsubscribe,
    version_negotiated,
)
from .pool import stomp_pool
from .registry import PROCESS, registry_started
from .selectors import stomp_connections_elsewhere
from .state import HIGH_WATER, HeldCommit, Pending, Subscription, Txn
from .waiting import Waiting

log = logging.getLogger(__name__)

#: Live connections of this process (the dashboard's section reads them through the registry).
LIVE: dict[str, StompConnection] = {}
#: Connections of this process that have not yet ended (given back what they held): gone
#: from LIVE when their transport ends, here until their end has been applied.
UNENDED: set[StompConnection] = set()


class TooManyConnections(Throttled):
    """The server holds as many connections as it may."""


class ConnectTimedOut(NotAuthenticated):
    """CONNECT did not come in time."""


#: Held while a CONNECT counts its user's connections and joins them.
_SIGNING_IN = threading.Lock()


#: A COMMIT of a transaction that holds pre-emptive deliveries not acknowledged under it.
Unsettled = UnsettledDeliveries


class StompConnection(Waiting):
    """One connection: its protocol (``machine``), its pump (``pump``: what was received
    applied in order on the STOMP pool, what is sent batched back to the loop), and the
    engine's operations its frames ask for. The transport calls :meth:`start`, then for
    its bytes :meth:`received` (awaiting it: that is the back-pressure) or
    :meth:`received_nowait` (when it answers False, the transport reads no more until
    ``room`` is set), and :meth:`lost` when it ends; the connection writes through
    ``transport.write_nowait(data)`` (None when all of it went; else what to await until
    it has), joining frames sent together into one write where ``transport.joins_frames``
    (a byte stream), and ends it with ``transport.close()`` (a coroutine, after what was
    sent) or ``transport.abort()`` (at once)."""

    def __init__(self, transport, *, kind: str, peer: str, address: str = "", version: str | None = None) -> None:
        self.transport = transport
        self.kind = kind
        self.peer = peer
        self.address = address  # the client's IP address (sign-ins are throttled by it)
        self.session = uuid.uuid4().hex
        self.parser = FrameParser(max_frame=settings.BATON_STOMP_MAX_FRAME, version=version)
        self.ws_version = version  # a WebSocket subprotocol fixes the version
        self.machine = StompMachine(
            session=self.session,
            version=version,
            heartbeat_ms=settings.BATON_STOMP_HEARTBEAT_MS,
            max_subscriptions=settings.BATON_STOMP_MAX_SUBSCRIPTIONS,
        )
        self.user = None
        self.broker: str | None = None
        self.connected_at = time.time()
        #: Shared with the machine: what the connection's threads both touch changes under it.
        self.lock = self.machine.lock
        self.begin_lock = threading.Lock()  # a transaction's unit of work is begun once
        self.closed = False  # no more frames are read or sent
        self.stopped_reading = False  # the bytes were not STOMP: nothing more is read
        self.last_received = self.last_sent = time.monotonic()
        self.heartbeat_send = self.heartbeat_receive = 0
        self.heartbeats: asyncio.Task | None = None
        self.connect_timer: asyncio.TimerHandle | None = None
        #: COMMITs held until their upstream units of work commit (each waiting without a thread).
        self.held: list[HeldCommit] = []
        #: Set once the connection has ended and given back what it held.
        self.ended = threading.Event()
        self._lost = False

    # --- the machine's state, as the registry and the subscriptions read it ----------------

    @property
    def version(self) -> str:
        return self.machine.version

    @property
    def failed(self) -> bool:
        return self.machine.failed

    @property
    def subscriptions(self) -> dict[str, Subscription]:
        return self.machine.subscriptions

    @property
    def transactions(self) -> dict[str, Txn]:
        return self.machine.transactions

    @property
    def unsent(self) -> int:
        """Bytes sent to the client, not yet written."""
        return self.pump.unsent

    @property
    def room(self) -> asyncio.Event:
        """Set while the client may send more (its frames are applied fast enough)."""
        return self.pump.room

    # --- the event loop's side ------------------------------------------------------------

    def start(self) -> None:
        self.loop = asyncio.get_running_loop()
        if getattr(self.transport, "write_direct", None) is not None:  # a socket any thread may write to
            self.write_direct = self._write_direct
        self.pump = Pump(
            self,
            self,
            pool=stomp_pool(),
            max_pending=settings.BATON_STOMP_MAX_PENDING,
            send_buffer=settings.BATON_STOMP_SEND_BUFFER,
            send_timeout_s=settings.BATON_STOMP_SEND_TIMEOUT_S,
        )
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
        self.pump.received([exc])

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
            await self.pump.room.wait()

    def received_nowait(self, data: bytes) -> bool:
        """Take the client's bytes; whether it may send more now (else once ``room`` is
        set: the connection's thread has fallen behind)."""
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
            return not self.pump.paused
        return self.pump.received(items)

    def lost(self) -> None:
        """The transport ended (the client left, or the server closed it). On the loop."""
        if self._lost:
            return
        self._lost = True
        self.closed = True
        if self.connect_timer is not None:
            self.connect_timer.cancel()
        LIVE.pop(self.session, None)
        with self.lock:
            self.lock.notify_all()
        self.pump.ended()
        if self.heartbeats is not None:
            self.heartbeats.cancel()
        self.pump.stopped()

    # --- the pump's link: writing to the client (on the loop) ------------------------------

    def writes(self, items: list[bytes]) -> list[tuple[bytes, int]]:
        if self.transport.joins_frames and len(items) > 1:  # a byte stream: the frames of one batch in one write
            data = b"".join(items)
            return [(data, len(data))]
        return [(item, len(item)) for item in items]

    def write_nowait(self, data: bytes):
        if self.closed:
            return None
        self.last_sent = time.monotonic()
        return self.transport.write_nowait(data)

    def idle(self) -> bool:
        return self.transport.idle()

    def _write_direct(self, data: bytes) -> int:
        if self.closed:
            return len(data)  # as write_nowait: nothing more goes
        self.last_sent = time.monotonic()
        return self.transport.write_direct(data)

    def written(self, size: int) -> None:
        unsent = self.pump.unsent
        if unsent < HIGH_WATER <= unsent + size:  # the client has read enough: the subscriptions get again
            for sub in list(self.subscriptions.values()):
                self._kick(sub)

    def given_up(self, why: str) -> None:
        if self.closed:
            return
        log.info("closing a STOMP connection: %s", why)
        self.closed = True
        self.transport.abort()

    async def close(self) -> None:
        self.closed = True
        await self.transport.close()

    async def _heartbeat(self) -> None:
        send_s, receive_s = self.heartbeat_send / 1000, self.heartbeat_receive / 1000
        # the margin the specification suggests, generous: a false timeout is the most
        # reported client problem; any bytes received count as life
        grace_s = receive_s * 2 + 1 if receive_s else 0
        while not self.closed:
            now = time.monotonic()
            due = []
            if send_s:
                if now - self.last_sent >= send_s and self.pump.writer is None:
                    self.last_sent = now
                    self.pump.send_now(b"\n", 1)
                due.append(self.last_sent + send_s)
            if grace_s:
                if now - self.last_received > grace_s:
                    log.info("closing a STOMP connection: no heart-beat from the client for %.1f s", grace_s)
                    self.closed = True
                    self.pump.write(CLOSE, 0)
                    return
                due.append(self.last_received + grace_s)
            await asyncio.sleep(max(0.01, min(due) - time.monotonic()))

    # --- sending (from any thread) ------------------------------------------------------------

    def send(self, frame: Frame, *, hold: bool | None = None) -> None:
        """Send ``frame`` after those sent before. ``hold``: more follow at once (hand them to
        the loop together); by default, while the connection's thread has more frames in hand."""
        if self.closed:
            return
        data = frame_encode(frame, version=self.version)
        self.pump.send(data, len(data), hold=hold)

    def close_after_sending(self) -> None:
        self.pump.close_after_sending()

    # --- the pump's applier: the connection's frames, in order (on the pool) --------------

    def applied(self, item: Any) -> tuple[int, Any]:
        """Apply a frame (or the error the loop found); SENDs to one queue in one transaction
        that wait behind it are applied with it, as one put. A durable commit's replies (and
        all the connection sends after them) wait for its sync, while this thread goes on
        with the next frame (:meth:`_until_synced`)."""
        with durability_deferred(self._until_synced):
            return self._applied(item)

    def _until_synced(self, ticket: Ticket) -> None:
        wal_when_synced(ticket, self.pump.held())

    def _applied(self, item: Any) -> tuple[int, Any]:
        applied = [item]
        ahead: Any = NOTHING
        try:
            if self.failed and not isinstance(item, BatonError):
                return 1, NOTHING
            if isinstance(item, ConnectTimedOut) and self.user is not None:
                return 1, NOTHING  # CONNECT came (and was applied) before the time ran out
            if isinstance(item, BatonError):
                self.error(item, None)
                return 1, NOTHING
            if self.machine.batchable(item):
                ahead = self._gathered(applied)
                self._perform(self.machine.sends_received(applied))
            else:
                self._perform(self.machine.frame_received(item))
        except BatonError as exc:
            self.error(exc, applied[-1])
        except Exception:
            log.exception("a STOMP frame failed")
            close_old_connections()
            self.error(BatonError("The server failed to handle the frame."), applied[-1])
        return len(applied), ahead

    def end(self) -> None:
        if self.ended.is_set():
            return
        try:
            self._ended()
        except Exception:
            log.exception("ending a STOMP connection failed")
        finally:
            UNENDED.discard(self)
            self.ended.set()

    # --- SENDs in a transaction, pipelined: one put of them all --------------------------

    def _gathered(self, batch: list[Frame]) -> Any:
        """Add to ``batch`` the SENDs already received right after its first, to the same
        queue in the same transaction (up to one with a receipt); return the frame that
        ended the batch (to apply next), or NOTHING. They become one put: under a unit of
        work nothing is visible before COMMIT either way, and a refusal rolls it all back."""
        while len(batch) < settings.BATON_MAX_BATCH and batch[-1].get("receipt") is None:
            following = self.pump.take_nowait()
            if following is NOTHING:
                return NOTHING
            if not self.machine.batch_goes_on(batch, following):
                return following
            batch.append(following)
        return NOTHING

    # --- the machine's actions, carried out --------------------------------------------------

    def _perform(self, actions: list[Any]) -> None:
        """Carry out the machine's actions in order: frames sent, the close, heart-beats, and
        the engine's operations (whose outcomes the machine answers with more actions)."""
        for action in actions:
            kind = type(action)
            if kind is Send:
                self._sent(action.frame)
            elif kind is Close:
                self.close_after_sending()
            else:
                self._ACTIONS[kind](self, action)

    def _sent(self, frame: Frame) -> None:
        if frame.command == "ERROR" and self.closed:
            return
        self.send(frame)

    def error(self, exc: BatonError, frame: Frame | None) -> None:
        """ERROR, then close (the specification's rule)."""
        self._perform(self.machine.refused(exc, frame))

    def receipt(self, frame: Frame) -> None:
        """``frame`` was applied: its RECEIPT (and after DISCONNECT, the close)."""
        self._perform(self.machine.done(frame))

    def _heartbeats(self, action: Heartbeats) -> None:
        self.heartbeat_send, self.heartbeat_receive = action.send_ms, action.receive_ms
        self.loop.call_soon_threadsafe(self._start_heartbeats)

    def _start_heartbeats(self) -> None:
        if not self.closed:
            self.heartbeats = self.loop.create_task(self._heartbeat())

    def _sign_in(self, action: SignIn) -> None:
        self.parser.version = self.machine.version
        with stomp_pool().blocking():  # a password's hash takes a fifth of a second: other frames go on
            user = engine.user_signed_in(login=action.login, passcode=action.passcode, address=self.address)
        if user is None:
            raise NotAuthenticated("Bad login or passcode: login is a user name, passcode its password or API token.")
        broker = engine.broker_chosen(user, host=action.host)
        limit = settings.BATON_STOMP_MAX_CONNECTIONS_PER_USER
        # across the STOMP servers: the others' from their registry rows, this one's as they are now
        elsewhere = stomp_connections_elsewhere(username=user.get_username(), process=PROCESS)
        with _SIGNING_IN:
            here = sum(1 for c in list(LIVE.values()) if c.user is not None and not c.closed and c.user.pk == user.pk)
            held = here + elsewhere
            if held >= limit:
                raise TooManyConnections(
                    f"User {user.get_username()!r} has {held} connections open, the most one user may have "
                    f"({limit}, BATON_STOMP_MAX_CONNECTIONS_PER_USER); close one first.",
                    retry_after=1,
                )
            self.broker = broker
            self.user = user
        self._perform(self.machine.signed_in(action.frame))

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

    def _put(self, action: Put) -> None:
        txn, messages = action.txn, action.messages
        if action.kind == "topic":
            fields, body = messages[0]
            engine.publication_send(
                self.user,
                broker=self.broker,
                topic=action.name,
                fields=fields,
                body=body,
                transaction=self._begun(txn) if txn else None,
            )
        elif len(messages) > 1:
            self._put_under(
                txn,
                lambda transaction, begin: engine.messages_send(
                    self.user,
                    broker=self.broker,
                    queue=action.name,
                    messages=messages,
                    transaction=transaction,
                    begin=begin,
                ),
            )
        elif txn is not None:
            fields, body = messages[0]
            self._put_under(
                txn,
                lambda transaction, begin: engine.message_send(
                    self.user,
                    broker=self.broker,
                    queue=action.name,
                    fields=fields,
                    body=body,
                    transaction=transaction,
                    begin=begin,
                ),
            )
        else:
            fields, body = messages[0]
            engine.message_send(
                self.user, broker=self.broker, queue=action.name, fields=fields, body=body, transaction=None
            )
        self.receipt(action.frame)

    # --- subscriptions ------------------------------------------------------------------

    def _subscribe(self, action: Subscribe) -> None:
        sub, name = action.sub, action.name
        sub.broker = self.broker
        if action.kind == "queue":
            sub.key, sub.lock_s, sub.queue_id = engine.queue_subscribed(self.user, broker=self.broker, queue=name)
        else:
            sub.topic_name = engine.subscription_name(
                user=self.user, connection=self.session, id=sub.id, durable=sub.durable
            )
            sub.key, sub.lock_s, sub.queue_id = engine.topic_subscribed(
                self.user, broker=self.broker, topic_filter=name, name=sub.topic_name, durable=sub.durable
            )
            sub.queue = sub.topic_name
        self.machine.subscribed(sub)
        self._watched(sub)
        self.receipt(action.frame)

    def _unsubscribe(self, action: Unsubscribe) -> None:
        sub = action.sub
        self._deferred_joined(sub)
        self._stop(sub)
        self.machine.unsubscribed(sub)
        self._give_back(list(sub.pending.values()))
        if action.remove:
            engine.topic_unsubscribed(broker=sub.broker, name=sub.topic_name)
        self.receipt(action.frame)

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

    def _forget(self, covered: list[Pending]) -> None:
        self._room_made(self.machine.forgotten(covered))

    def _room_made(self, subs) -> None:
        """Messages of these subscriptions were acknowledged (or given back): room to get more."""
        for sub in subs:
            if sub.ack != "auto":
                self._kick(sub)

    def _ack(self, action: Ack) -> None:
        covered, txn = action.covered, action.txn
        if txn is not None:
            for item in covered:
                if item.txn is not None:  # got under it already: COMMIT consumes it
                    txn.acked.add(item.msg_id)
                else:  # completed at the COMMIT
                    txn.deferred.append(item)
        else:
            with self.own_commits():  # its commit's wake-up of the queue is room made
                self._completed(covered)
        self._forget(covered)
        self.receipt(action.frame)

    def _completed(self, covered: list[Pending]) -> None:
        if len(covered) == 1:
            engine.lock_completed(self.user, token=covered[0].token, transaction=None)
            return
        own = engine.transaction_begun(self.user, broker=self.broker)  # all or none: a unit of work of its own
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

    def _nack(self, action: Nack) -> None:
        covered, txn = action.covered, action.txn
        self._forget(covered)
        if txn is not None:  # given back when the transaction ends (requeue:false: dead-lettered at COMMIT)
            # (a pre-emptive delivery NACKed stays un-ACKed: COMMIT is refused, ABORT gives it back)
            tokens = [item.token for item in covered if item.txn is None]
            (txn.abandoned if action.requeue else txn.discarded).extend(tokens)
        elif action.requeue:
            self._give_back(covered)
        else:
            self._dead_lettered([item.token for item in covered if item.token is not None])
        self.receipt(action.frame)

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

    def _begin(self, action: Begin) -> None:
        # pre-emptive subscriptions now get under it, uncommitted messages already there too
        wakeup_notify([sub.key for sub in list(self.subscriptions.values()) if sub.preemptive])
        self.receipt(action.frame)

    def _ending(self, txn: Txn) -> None:
        """No more pre-emptive gets under ``txn``; those under way have sent their MESSAGEs."""
        with self.lock:
            txn.ending = True
            self.lock.wait_for(lambda: txn.getting == 0)

    def _transaction_ended(self, txn: Txn) -> None:
        """No longer open; its pre-emptive deliveries forgotten (its end consumed them or gave them back)."""
        self._room_made(self.machine.transaction_ended(txn))

    def _commit(self, action: Commit) -> None:
        txn, frame = action.txn, action.frame
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
        self._transaction_ended(txn)
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

    def _abort(self, action: Abort) -> None:
        txn = action.txn
        self._ending(txn)
        try:
            if txn.id is not None:
                engine.transaction_rolled_back(self.user, transaction=txn.id)  # backed out already: no matter
        finally:  # then its deliveries are back, in their places, before the subscription gets again
            self._transaction_ended(txn)
        # what it acknowledged is available again, not left locked (docs/stomp.md)
        self._give_back(txn.completed + [item.token for item in txn.deferred] + txn.abandoned + txn.discarded)
        self.receipt(action.frame)

    def _disconnect(self, action: Disconnect) -> None:
        self._end_all()
        self.receipt(action.frame)  # and the close: nothing after DISCONNECT is applied

    _ACTIONS = {
        Heartbeats: _heartbeats,
        SignIn: _sign_in,
        Put: _put,
        Subscribe: _subscribe,
        Unsubscribe: _unsubscribe,
        Ack: _ack,
        Nack: _nack,
        Begin: _begin,
        Commit: _commit,
        Abort: _abort,
        Disconnect: _disconnect,
    }

    # --- the end ----------------------------------------------------------------------------

    def _end_all(self) -> None:
        """Stop the subscriptions, roll back open transactions, give back what was not
        acknowledged, remove non-durable topic subscriptions."""
        subs = list(self.subscriptions.values())
        self.subscriptions.clear()
        for sub in subs:
            self._stop(sub)
        for txn in list(self.transactions.values()):
            self._transaction_ended(txn)
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

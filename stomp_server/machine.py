"""The STOMP protocol of one connection as a state machine, without I/O (docs/stomp.md, "How
it is served"): frames in, actions out, as ``frames.py`` parses bytes into frames.

:meth:`StompMachine.frame_received` takes a client frame, checks it against the protocol
and the connection's state (its version, subscriptions, unacknowledged messages, open
transactions) and returns what is to be done: frames to send (:class:`Send`), the end of
the connection (:class:`Close`), or a request to the engine (:class:`SignIn`, :class:`Put`,
:class:`Subscribe`, ...). The adapter (``protocol.py``) carries out the engine's requests
and tells the machine their outcomes (:meth:`signed_in`, :meth:`subscribed`, :meth:`done`,
:meth:`refused`), which answer with the frames to send. A subscription's deliveries become
MESSAGE frames here too (:meth:`message`), and acknowledgements are matched to them here.

States (:class:`State`): ``AWAITING_CONNECT`` until CONNECT has been applied; ``CONNECTED``;
``FAILED`` once an ERROR was sent (every frame after it is dropped); ``DISCONNECTED`` once a
DISCONNECT was applied. No frame but CONNECT (or STOMP) is applied before ``CONNECTED``.

The machine is shared by the connection's pool threads (the frames' and the subscriptions'):
what they both touch (unacknowledged messages, transactions) changes under ``lock``.
"""

from __future__ import annotations

import enum
import itertools
import threading
from dataclasses import dataclass
from typing import Any

from baton_client.errors import InvalidInput, NotAuthenticated, NotFound
from baton_client.errors import BatonError, Conflict

from .frames import Frame, FrameError, frame_encode
from .headers import message_fields, message_headers
from .state import Pending, Subscription, Txn

VERSIONS = ("1.0", "1.1", "1.2")
ACK_MODES = ("auto", "client", "client-individual")
SERVER = "Baton/0.1"


class StompRefused(InvalidInput):
    """The frame was refused."""


class UnknownDestination(NotFound):
    """No such destination."""


class LimitReached(Conflict):
    """A bound of the STOMP server was reached (config/settings/stomp.py)."""


class State(enum.Enum):
    AWAITING_CONNECT = "awaiting_connect"
    CONNECTED = "connected"
    FAILED = "failed"
    DISCONNECTED = "disconnected"


# --- actions ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Send:
    """Send this frame to the client."""

    frame: Frame


@dataclass(frozen=True)
class Close:
    """Close the connection once what was sent before has gone."""


@dataclass(frozen=True)
class Heartbeats:
    """Start heart-beating: the server's every ``send_ms``, the client's within ``receive_ms`` (0: none)."""

    send_ms: int
    receive_ms: int


@dataclass(frozen=True)
class SignIn:
    """Sign ``login`` in with ``passcode`` and choose the broker ``host`` names; then :meth:`StompMachine.signed_in`."""

    frame: Frame
    login: str | None
    passcode: str | None
    host: str | None


@dataclass(frozen=True)
class Put:
    """SENDs to ``name`` (a queue, or a topic string), under ``txn`` or none; one put of them all."""

    frame: Frame  # the last, whose receipt answers them all
    kind: str  # "queue" | "topic"
    name: str
    txn: Txn | None
    messages: list[tuple[dict[str, Any], bytes]]


@dataclass(frozen=True)
class Subscribe:
    """Make ``sub``'s queue (and, for a topic, its subscription); then :meth:`StompMachine.subscribed`."""

    frame: Frame
    sub: Subscription
    kind: str
    name: str


@dataclass(frozen=True)
class Unsubscribe:
    """Stop ``sub`` (already forgotten by the machine), give back what it was sent and not
    acknowledged, and remove its topic subscription when ``remove``."""

    frame: Frame
    sub: Subscription
    remove: bool


@dataclass(frozen=True)
class Ack:
    """Complete ``covered`` (in delivery order), under ``txn`` or at once."""

    frame: Frame
    covered: list[Pending]
    txn: Txn | None


@dataclass(frozen=True)
class Nack:
    """Give back ``covered`` (``requeue``) or dead-letter it, under ``txn`` (at its end) or at once."""

    frame: Frame
    covered: list[Pending]
    txn: Txn | None
    requeue: bool


@dataclass(frozen=True)
class Begin:
    frame: Frame
    txn: Txn


@dataclass(frozen=True)
class Commit:
    frame: Frame
    txn: Txn


@dataclass(frozen=True)
class Abort:
    frame: Frame
    txn: Txn


@dataclass(frozen=True)
class Disconnect:
    """End everything the connection holds; then :meth:`StompMachine.done` (RECEIPT, close)."""

    frame: Frame


# --- negotiation --------------------------------------------------------------------------------


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


def _required(frame: Frame, name: str) -> str:
    value = frame.get(name)
    if value is None or value == "":
        raise StompRefused(f"{frame.command} needs the {name} header.", errors={name: ["Required."]})
    return value


def destination_parsed(frame: Frame) -> tuple[str, str]:
    """("queue" | "topic", the name after the prefix) of the frame's destination."""
    destination = _required(frame, "destination")
    for kind in ("queue", "topic"):
        prefix = f"/{kind}/"
        if destination.startswith(prefix) and len(destination) > len(prefix):
            return kind, destination[len(prefix) :]
    raise UnknownDestination(
        f"Unknown destination {destination[:100]!r}: use /queue/{{queue}} or /topic/{{topic string}}.",
        destination=destination[:100],
    )


class StompMachine:
    """One connection's protocol state (see the module's docstring)."""

    def __init__(
        self,
        *,
        session: str,
        version: str | None = None,
        heartbeat_ms: int = 0,
        max_subscriptions: int = 1000,
    ) -> None:
        self.session = session
        #: A WebSocket subprotocol fixes the version; else CONNECT negotiates it.
        self.fixed_version = version
        self.version = version or "1.0"
        self.heartbeat_ms = heartbeat_ms
        self.max_subscriptions = max_subscriptions
        self.state = State.AWAITING_CONNECT
        self.heartbeat_send = self.heartbeat_receive = 0
        self.subscriptions: dict[str, Subscription] = {}
        self.transactions: dict[str, Txn] = {}
        self.acks: dict[str, Pending] = {}  # by ack id (1.2)
        self.ack_ids = itertools.count(1)
        self.lock = threading.Condition()

    @property
    def failed(self) -> bool:
        """No more frames are applied (an ERROR was sent, or DISCONNECT applied)."""
        return self.state in (State.FAILED, State.DISCONNECTED)

    # --- frames in --------------------------------------------------------------------------

    def frame_received(self, frame: Frame) -> list[Any]:
        """What to do for a client frame (nothing once the connection has failed)."""
        if self.failed:
            return []
        try:
            return [self._handled(frame)]
        except BatonError as exc:
            return self.refused(exc, frame)

    def _handled(self, frame: Frame) -> Any:
        command = frame.command
        if command in ("CONNECT", "STOMP"):
            return self._connect(frame)
        if self.state is not State.CONNECTED:
            raise NotAuthenticated("Send CONNECT (or STOMP) first.")
        handler = _HANDLERS.get(command)
        if handler is None:
            raise StompRefused(f"{command} is a frame the server sends, not one it receives.")
        return handler(self, frame)

    def _connect(self, frame: Frame) -> SignIn:
        if self.state is not State.AWAITING_CONNECT:
            raise StompRefused("Already connected.")
        version = self.fixed_version or version_negotiated(frame)
        if version is None or (self.fixed_version and version_negotiated(frame) is None):
            self.version = "1.2"
            raise StompRefused(f"Supported protocol versions are {' '.join(VERSIONS)}.", version=",".join(VERSIONS))
        self.version = version
        if version != "1.0":
            self.heartbeat_send, self.heartbeat_receive = heart_beats(frame, server_ms=self.heartbeat_ms)
        return SignIn(frame=frame, login=frame.get("login"), passcode=frame.get("passcode"), host=frame.get("host"))

    def signed_in(self, frame: Frame) -> list[Any]:
        """CONNECT was applied (the user signed in, the broker chosen): CONNECTED."""
        self.state = State.CONNECTED
        send_ms, receive_ms = self.heartbeat_send, self.heartbeat_receive
        hb = self.heartbeat_ms
        headers = [("version", self.version), ("server", SERVER), ("session", self.session)]
        # on every version, 1.0 included (no heart-beats there: 0,0), as clients read it
        headers.append(("heart-beat", f"{hb if send_ms else 0},{hb if receive_ms else 0}"))
        actions: list[Any] = [Send(Frame("CONNECTED", headers))]
        if send_ms or receive_ms:
            actions.append(Heartbeats(send_ms=send_ms, receive_ms=receive_ms))
        return actions

    # --- SEND ---------------------------------------------------------------------------------

    def batchable(self, frame: Any) -> bool:
        """A SEND to a queue in a transaction: those that follow it to the same queue in the same
        transaction become one put (:meth:`sends_received`)."""
        return (
            isinstance(frame, Frame)
            and frame.command == "SEND"
            and self.state is State.CONNECTED
            and frame.get("transaction") is not None
            and (frame.get("destination") or "").startswith("/queue/")
        )

    @staticmethod
    def batch_goes_on(batch: list[Frame], following: Any) -> bool:
        """Whether ``following`` joins ``batch`` (SENDs, the first of which was batchable)."""
        first = batch[0]
        return (
            isinstance(following, Frame)
            and following.command == "SEND"
            and following.get("destination") == first.get("destination")
            and following.get("transaction") == first.get("transaction")
        )

    def sends_received(self, frames: list[Frame]) -> list[Any]:
        """SENDs received together (one, or a batch): one :class:`Put` of them all."""
        if self.failed:
            return []
        try:
            if self.state is not State.CONNECTED:
                raise NotAuthenticated("Send CONNECT (or STOMP) first.")
            kind, name = destination_parsed(frames[0])
            txn = self._transaction(frames[0])
            messages = [(message_fields(frame), frame.body) for frame in frames]
        except BatonError as exc:
            return self.refused(exc, frames[-1])
        return [Put(frame=frames[-1], kind=kind, name=name, txn=txn, messages=messages)]

    def _send(self, frame: Frame) -> Put:
        kind, name = destination_parsed(frame)
        return Put(
            frame=frame,
            kind=kind,
            name=name,
            txn=self._transaction(frame),
            messages=[(message_fields(frame), frame.body)],
        )

    # --- subscriptions ------------------------------------------------------------------------

    def _subscribe(self, frame: Frame) -> Subscribe:
        kind, name = destination_parsed(frame)
        limit = self.max_subscriptions
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
        if kind == "topic" and durable and not frame.get("id"):
            raise StompRefused("A durable subscription needs an id header.", errors={"id": ["Required."]})
        sub = Subscription(
            id=sub_id,
            destination=frame.get("destination"),
            broker="",
            queue=name,
            ack=ack,
            prefetch=int(prefetch_text),
            key="",
            preemptive=preemptive == "true",
            durable=kind == "topic" and durable,
        )
        return Subscribe(frame=frame, sub=sub, kind=kind, name=name)

    def subscribed(self, sub: Subscription) -> None:
        """The engine made what ``sub`` gets from: it is the connection's."""
        self.subscriptions[sub.id] = sub

    def _unsubscribe(self, frame: Frame) -> Unsubscribe:
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
        remove = bool(sub.topic_name) and (
            not sub.durable or frame.get("durable") == "true" or frame.get("persistent") == "true"
        )
        return Unsubscribe(frame=frame, sub=sub, remove=remove)

    def unsubscribed(self, sub: Subscription) -> None:
        self.subscriptions.pop(sub.id, None)

    # --- deliveries and acknowledgements ---------------------------------------------------

    def message(self, sub: Subscription, message, txn: Txn | None = None) -> Frame:
        """The MESSAGE frame of a delivery to ``sub`` (got under ``txn`` when pre-emptive);
        on a client-acknowledged subscription it is unacknowledged from now."""
        ack_id = None
        if sub.ack != "auto":
            ack_id = f"{next(self.ack_ids)}"
            pending = Pending(ack_id=ack_id, msg_id=message.msg_id, token=message.lock_token, subscription=sub, txn=txn)
            with self.lock:
                sub.pending[pending.msg_id] = pending
                self.acks[ack_id] = pending
                if txn is not None:
                    txn.delivered[pending.msg_id] = pending
        headers = message_headers(
            message, destination=sub.destination, subscription=sub.id, ack=ack_id if self.version == "1.2" else None
        )
        if txn is not None:
            headers.insert(3, ("transaction", txn.name))
        frame = Frame("MESSAGE", headers, bytes(message.body))
        if self.version == "1.0" and not _writable_unescaped(headers):
            # a property 1.0 cannot carry: without the properties
            frame = Frame("MESSAGE", headers[: 4 if txn is not None else 3], frame.body)
        return frame

    def _acknowledged(self, frame: Frame) -> list[Pending]:
        """The messages an ACK or NACK covers (in delivery order), or ERROR."""
        if self.version == "1.2":
            ack_id = _required(frame, "id")
            with self.lock:
                pending = self.acks.get(ack_id)
            if pending is None:
                raise StompRefused(
                    f"{frame.command} of an unknown or already acknowledged message (id {ack_id[:100]!r}).",
                    id=ack_id[:100],
                )
        else:
            msg_id = _required(frame, "message-id")
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

    def _ack(self, frame: Frame) -> Ack:
        covered = self._acknowledged(frame)
        txn = self._transaction(frame)
        self._preemptive_checked(frame, covered, txn)
        return Ack(frame=frame, covered=covered, txn=txn)

    def _nack(self, frame: Frame) -> Nack:
        requeue = frame.get("requeue", "true")
        if requeue not in ("true", "false"):
            raise StompRefused(
                f"requeue must be true or false, not {requeue[:40]!r}.", errors={"requeue": ["Must be true or false."]}
            )
        covered = self._acknowledged(frame)
        txn = self._transaction(frame)
        self._preemptive_checked(frame, covered, txn)
        return Nack(frame=frame, covered=covered, txn=txn, requeue=requeue == "true")

    def forgotten(self, covered) -> set[Subscription]:
        """These deliveries are acknowledged or given back: no longer the client's to
        acknowledge; the subscriptions that have room again."""
        with self.lock:
            for item in covered:
                item.subscription.pending.pop(item.msg_id, None)
                self.acks.pop(item.ack_id, None)
            self.lock.notify_all()
        return {item.subscription for item in covered}

    # --- transactions -------------------------------------------------------------------------

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

    def _open_transaction(self, frame: Frame) -> Txn:
        name = _required(frame, "transaction")
        txn = self.transactions.get(name)
        if txn is None:
            raise StompRefused(f"No transaction {name[:100]!r} is open on this connection.", transaction=name[:100])
        return txn

    def _begin(self, frame: Frame) -> Begin:
        name = _required(frame, "transaction")
        if name in self.transactions:
            raise StompRefused(
                f"Transaction {name[:100]!r} is already open on this connection.", transaction=name[:100]
            )
        txn = Txn(name=name)  # its unit of work is begun when first needed
        with self.lock:
            self.transactions[name] = txn
        return Begin(frame=frame, txn=txn)

    def _commit(self, frame: Frame) -> Commit:
        return Commit(frame=frame, txn=self._open_transaction(frame))

    def _abort(self, frame: Frame) -> Abort:
        return Abort(frame=frame, txn=self._open_transaction(frame))

    def transaction_ended(self, txn: Txn) -> set[Subscription]:
        """``txn`` is no longer open; its pre-emptive deliveries are forgotten (its end
        consumed them or gave them back): the subscriptions that have room again."""
        with self.lock:
            self.transactions.pop(txn.name, None)
        return self.forgotten(list(txn.delivered.values()))

    def _disconnect(self, frame: Frame) -> Disconnect:
        return Disconnect(frame=frame)

    # --- outcomes -------------------------------------------------------------------------------

    def done(self, frame: Frame) -> list[Any]:
        """The engine applied ``frame``: its RECEIPT (and, after DISCONNECT, the close)."""
        actions: list[Any] = []
        receipt = frame.get("receipt")
        if receipt is not None:
            actions.append(Send(Frame("RECEIPT", [("receipt-id", receipt)])))
        if frame.command == "DISCONNECT":
            self.state = State.DISCONNECTED  # nothing after DISCONNECT is applied
            actions.append(Close())
        return actions

    def refused(self, exc: BatonError, frame: Frame | None) -> list[Any]:
        """ERROR, then close (the specification's rule); nothing more for a frame once an
        ERROR was sent. ``frame``: the frame refused (None: the connection itself is, e.g. a
        timeout, bytes that are not STOMP)."""
        if self.failed and frame is not None:
            return []
        self.state = State.FAILED
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
        error = Frame("ERROR", headers, body.encode("utf-8"))
        if self.version == "1.0" and not _writable_unescaped(headers):  # an unwritable value: the message alone
            error = Frame("ERROR", [("message", "The frame was refused.")], error.body)
        return [Send(error), Close()]


def _writable_unescaped(headers: list[tuple[str, str]]) -> bool:
    try:
        frame_encode(Frame("X", headers), version="1.0")
        return True
    except FrameError:
        return False


_HANDLERS = {
    "SEND": StompMachine._send,
    "SUBSCRIBE": StompMachine._subscribe,
    "UNSUBSCRIBE": StompMachine._unsubscribe,
    "ACK": StompMachine._ack,
    "NACK": StompMachine._nack,
    "BEGIN": StompMachine._begin,
    "COMMIT": StompMachine._commit,
    "ABORT": StompMachine._abort,
    "DISCONNECT": StompMachine._disconnect,
}

"""How a sender agent talks to a receiver: one protocol, two transports.

In-process: the target broker is on this platform; the receiver's services are called
directly. Session: the target broker is on another platform instance; the agent keeps one
WebSocket session to it (``/api/session/``, with that platform's token) and sends its
``batch_receive``, ``batch_commit``, ``batch_backout`` and ``batch_status`` operations
there (brokers.channels.api.receiving), pipelined: a batch is sent without waiting for its
answer, which is read before anything else is asked about that batch. Every failure to get
an answer (the session dropped, the receiver restarted, an error reply) is a
:class:`TransportError`; the agent then ends, retrying with back-off, and the next one asks
the receiver about every batch in doubt and resends what it never got (docs/channels.md).
"""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any, Protocol

from baton_client.session import Session

from baton_client.errors import BatonError

from ..models import Channel
from .receiver import receiver_batch_backout, receiver_batch_commit, receiver_batch_receive, receiver_batch_status


class TransportError(Exception):
    """The receiver could not be reached or did not answer as expected."""


class Transport(Protocol):
    def receive(self, payload: dict) -> None:
        """Send a batch; its answer may be read later (by the next call about its seq)."""

    def commit(self, seq: int, through: int | None = None) -> dict:
        """Commit batch ``seq`` (and with ``through`` the batches after it up to ``through``)."""

    def backout(self, seq: int) -> dict: ...
    def status(self, seq: int) -> dict: ...
    def close(self) -> None: ...


class InProcessTransport:
    def __init__(self, channel: Channel) -> None:
        self.key = {"channel": channel.name, "source_broker": channel.source_broker.name}

    def _call(self, fn, **kwargs) -> dict:
        try:
            return fn(**kwargs)
        except BatonError as exc:
            raise TransportError(f"{exc.code}: {exc.message}") from exc

    def receive(self, payload: dict) -> None:
        self._call(receiver_batch_receive, payload=payload)

    def commit(self, seq: int, through: int | None = None) -> dict:
        return self._call(receiver_batch_commit, seq=seq, through=through, **self.key)

    def backout(self, seq: int) -> dict:
        return self._call(receiver_batch_backout, seq=seq, **self.key)

    def status(self, seq: int) -> dict:
        return self._call(receiver_batch_status, seq=seq, **self.key)

    def close(self) -> None:
        pass


class SessionTransport:
    """One session to the other platform for the agent's run; requests pipelined."""

    def __init__(self, channel: Channel, *, timeout: float = 30.0) -> None:
        self.key = {"channel": channel.name, "source_broker": channel.source_broker.name}
        self.session = Session(
            channel.target_url, channel.target_token, timeout=timeout, user_agent=f"baton-channel/{channel.name}"
        )
        self.unread: dict[int, Future] = {}  # batch seq -> the answer to its batch_receive, not read yet

    def _failed(self, op: str, exc: BatonError) -> TransportError:
        status = f"HTTP {exc.status} " if exc.status else ""
        return TransportError(f"{op} on {self.session.url}: {status}{exc.code}: {exc.message}")

    def _send(self, op: str, fields: dict[str, Any]) -> Future:
        try:
            return self.session.send(op, fields)
        except BatonError as exc:  # no session could be opened
            raise self._failed(op, exc) from exc

    def _answer(self, op: str, future: Future) -> dict:
        try:
            return self.session.result(op, future)
        except BatonError as exc:
            raise self._failed(op, exc) from exc

    def _ask(self, op: str, seq: int, through: int | None = None) -> dict:
        """Read the receive answers of batches ``seq``..``through`` (if still unread), then
        ask ``op`` about them."""
        sent = [self.unread.pop(n) for n in range(seq, (through or seq) + 1) if n in self.unread]
        fields = {"seq": seq, **self.key, **({"through": through} if through is not None else {})}
        asked = self._send(op, fields)  # pipelined behind the receives
        for future in sent:
            self._answer("batch_receive", future)
        return self._answer(op, asked)

    def receive(self, payload: dict) -> None:
        self.unread[payload["seq"]] = self._send("batch_receive", payload)

    def commit(self, seq: int, through: int | None = None) -> dict:
        return self._ask("batch_commit", seq, through)

    def backout(self, seq: int) -> dict:
        return self._ask("batch_backout", seq)

    def status(self, seq: int) -> dict:
        return self._ask("batch_status", seq)

    def close(self) -> None:
        self.session.close()


def transport_for(channel: Channel) -> Transport:
    return SessionTransport(channel) if channel.target_url else InProcessTransport(channel)

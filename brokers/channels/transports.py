"""How a sender agent talks to a receiver: one protocol, two transports.

In-process: the target broker is on this platform; the receiver's services are called
directly. HTTP: the target broker is on another platform instance; the same calls go to
its ``/api/receiver/batches/…`` endpoints with token authentication. Every failure to get
an answer is a :class:`TransportError`; the agent retries with back-off.
"""
from __future__ import annotations

from typing import Protocol

import httpx

from config.errors import BatonError

from ..models import Channel


class TransportError(Exception):
    """The receiver could not be reached or did not answer as expected."""


class Transport(Protocol):
    def receive(self, payload: dict) -> dict: ...
    def commit(self, seq: int) -> dict: ...
    def backout(self, seq: int) -> dict: ...
    def status(self, seq: int) -> dict: ...


class InProcessTransport:
    def __init__(self, channel: Channel) -> None:
        self.key = {"channel": channel.name, "source_broker": channel.source_broker.name}

    def _call(self, fn, **kwargs) -> dict:
        try:
            return fn(**kwargs)
        except BatonError as exc:
            raise TransportError(f"{exc.code}: {exc.message}") from exc

    def receive(self, payload: dict) -> dict:
        from .receiver import receiver_batch_receive

        return self._call(receiver_batch_receive, payload=payload)

    def commit(self, seq: int) -> dict:
        from .receiver import receiver_batch_commit

        return self._call(receiver_batch_commit, seq=seq, **self.key)

    def backout(self, seq: int) -> dict:
        from .receiver import receiver_batch_backout

        return self._call(receiver_batch_backout, seq=seq, **self.key)

    def status(self, seq: int) -> dict:
        from .receiver import receiver_batch_status

        return self._call(receiver_batch_status, seq=seq, **self.key)


class HttpTransport:
    def __init__(self, channel: Channel, *, timeout: float = 30.0) -> None:
        self.key = {"channel": channel.name, "source_broker": channel.source_broker.name}
        self.client = httpx.Client(
            base_url=channel.target_url.rstrip("/"), timeout=timeout,
            headers={"Authorization": f"Token {channel.target_token}", "Content-Type": "application/json"},
        )

    def _post(self, path: str, body: dict) -> dict:
        try:
            response = self.client.post(f"/api/receiver/batches/{path}", json=body)
        except httpx.HTTPError as exc:
            raise TransportError(f"{type(exc).__name__}: {exc}") from exc
        if response.status_code != 200:
            try:
                detail = response.json()
                text = f"{detail.get('code')}: {detail.get('message')}"
            except ValueError:
                text = response.text[:200]
            raise TransportError(f"HTTP {response.status_code} from {self.client.base_url}: {text}")
        return response.json()

    def receive(self, payload: dict) -> dict:
        return self._post("", payload)

    def commit(self, seq: int) -> dict:
        return self._post("commit/", {"seq": seq, **self.key})

    def backout(self, seq: int) -> dict:
        return self._post("backout/", {"seq": seq, **self.key})

    def status(self, seq: int) -> dict:
        return self._post("status/", {"seq": seq, **self.key})

    def close(self) -> None:
        self.client.close()


def transport_for(channel: Channel) -> Transport:
    return HttpTransport(channel) if channel.target_url else InProcessTransport(channel)

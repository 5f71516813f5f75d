"""How a Spark job talks to the platform: one small client, no Django.

Everything the ingest sends goes through :class:`PlatformTarget` — ``put_batch`` (REST batch
puts today; the WebSocket session's ``put`` can replace its body without touching the job)
and ``progress`` (the ingest's live counters). The token comes from the environment
(``BATON_API_TOKEN``), never from the command line, which other users can read.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx

#: Attempts per request when the platform is briefly unreachable or busy (429, 503).
RETRIES = 5


@dataclass(frozen=True)
class BatchOutcome:
    put: int  # messages put by this call
    skipped: int  # messages whose dedup_key the queue had already taken


class PlatformError(RuntimeError):
    """The platform refused a request; the message carries its code and message."""


@dataclass(frozen=True)
class PlatformTarget:
    url: str
    broker: str
    queue: str
    token: str
    ingest_id: str = ""

    @classmethod
    def from_env(cls, *, url: str, broker: str, queue: str, ingest_id: str = "") -> "PlatformTarget":
        token = os.environ.get("BATON_API_TOKEN", "")
        if not token:
            raise PlatformError("Set BATON_API_TOKEN to an API token (manage.py api_token USER).")
        return cls(url=url.rstrip("/"), broker=broker, queue=queue, token=token, ingest_id=ingest_id)

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers={"Authorization": f"Token {self.token}"}, timeout=120)

    def put_batch(self, client: httpx.Client, messages: list[dict[str, Any]]) -> BatchOutcome:
        """Put ``messages`` (API message objects, each with a ``dedup_key``) in one call:
        one database transaction on the platform, keys and messages together."""
        path = f"/api/brokers/{quote(self.broker, safe='')}/queues/{quote(self.queue, safe='')}/messages/"
        body = _sent(client, "POST", path, {"messages": messages})
        return BatchOutcome(put=len(body["messages"]), skipped=len(body.get("duplicates", [])))

    def progress(self, client: httpx.Client, report: dict[str, Any]) -> None:
        """Report progress of the ingest this job runs for (nothing when it runs alone)."""
        if self.ingest_id:
            _sent(client, "POST", f"/api/ingests/{quote(self.ingest_id, safe='')}/progress/", report)


def _sent(client: httpx.Client, method: str, path: str, payload: dict[str, Any]) -> dict[str, Any]:
    for attempt in range(RETRIES):
        try:
            response = client.request(method, path, json=payload)
        except httpx.TransportError:
            if attempt == RETRIES - 1:
                raise
        else:
            if response.status_code not in (429, 503) or attempt == RETRIES - 1:
                break
        time.sleep(0.2 * 2 ** attempt)  # back-off between retries of a failed request
    if response.status_code >= 300:
        try:
            detail = response.json()
            text = f"{detail.get('code')}: {detail.get('message')} {detail.get('errors') or ''}".strip()
        except ValueError:
            text = response.text[:500]
        raise PlatformError(f"{method} {path} answered {response.status_code} {text}")
    return response.json() if response.content else {}

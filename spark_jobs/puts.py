"""How a Spark job talks to the platform: one small client, no Django.

Everything the ingest sends goes through :class:`PlatformTarget` — ``put_batch`` (REST batch
puts today; the WebSocket session's ``put`` can replace its body without touching the job)
and ``progress`` (the ingest's live counters). The token comes from the environment
(``BATON_API_TOKEN``), never from the command line, which other users can read. Standard
library only (``http.client``, one kept-alive connection per task), so executors need nothing
installed beyond PySpark.
"""
from __future__ import annotations

import http.client
import json
import os
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

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

    def client(self) -> "Connection":
        return Connection(self.url, self.token)

    def put_batch(self, client: "Connection", messages: list[dict[str, Any]]) -> BatchOutcome:
        """Put ``messages`` (API message objects, each with a ``dedup_key``) in one call:
        one database transaction on the platform, keys and messages together."""
        path = f"/api/brokers/{quote(self.broker, safe='')}/queues/{quote(self.queue, safe='')}/messages/"
        body = _sent(client, "POST", path, {"messages": messages})
        return BatchOutcome(put=len(body["messages"]), skipped=len(body.get("duplicates", [])))

    def progress(self, client: "Connection", report: dict[str, Any]) -> None:
        """Report progress of the ingest this job runs for (nothing when it runs alone)."""
        if self.ingest_id:
            _sent(client, "POST", f"/api/ingests/{quote(self.ingest_id, safe='')}/progress/", report)


class Connection:
    """One kept-alive HTTP(S) connection to the platform (reopened after an error)."""

    def __init__(self, url: str, token: str, timeout: float = 120) -> None:
        parts = urlsplit(url)
        self._factory = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        self._host, self._port, self._prefix = parts.hostname, parts.port, parts.path.rstrip("/")
        self._headers = {"Authorization": f"Token {token}", "Content-Type": "application/json"}
        self._timeout = timeout
        self._conn: http.client.HTTPConnection | None = None

    def request(self, method: str, path: str, payload: dict[str, Any]) -> tuple[int, bytes]:
        if self._conn is None:
            self._conn = self._factory(self._host, self._port, timeout=self._timeout)
        try:
            self._conn.request(method, self._prefix + path, body=json.dumps(payload).encode(), headers=self._headers)
            response = self._conn.getresponse()
            return response.status, response.read()
        except (OSError, http.client.HTTPException):
            self.close()
            raise

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> "Connection":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _sent(client: Connection, method: str, path: str, payload: dict[str, Any]) -> dict[str, Any]:
    """Send with retries: a put retried after a lost reply is safe (its keys make it so)."""
    for attempt in range(RETRIES):
        try:
            status, content = client.request(method, path, payload)
        except (OSError, http.client.HTTPException):
            if attempt == RETRIES - 1:
                raise
        else:
            if status not in (429, 503) or attempt == RETRIES - 1:
                break
        time.sleep(0.2 * 2 ** attempt)  # back-off between retries of a failed request
    if status >= 300:
        try:
            detail = json.loads(content)
            text = f"{detail.get('code')}: {detail.get('message')} {detail.get('errors') or ''}".strip()
        except ValueError:
            text = content[:500].decode(errors="replace")
        raise PlatformError(f"{method} {path} answered {status} {text}")
    return json.loads(content) if content else {}

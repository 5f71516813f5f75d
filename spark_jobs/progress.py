"""Where a Spark job reports the progress of the ingest it runs for: ``POST
/api/ingests/{id}/progress/`` (REST: the session has no operation for it). Standard library
only (``http.client``, one kept-alive connection per task), no Django."""

from __future__ import annotations

import http.client
import json
import time
from typing import Any
from urllib.parse import quote, urlsplit

#: Attempts per report when the platform is briefly unreachable or busy (429, 503).
RETRIES = 5


class ProgressError(RuntimeError):
    """The platform refused a progress report; the message carries its code and message."""


class ProgressReporter:
    """Reports to the ingest ``ingest_id`` (nothing when the job runs alone, without one).
    A context manager: its connection is closed at the end."""

    def __init__(self, url: str, token: str, ingest_id: str, timeout: float = 120) -> None:
        parts = urlsplit(url)
        self._factory = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        self._host, self._port, self._prefix = parts.hostname, parts.port, parts.path.rstrip("/")
        self._headers = {"Authorization": f"Token {token}", "Content-Type": "application/json"}
        self._path = f"/api/ingests/{quote(ingest_id, safe='')}/progress/" if ingest_id else ""
        self._timeout = timeout
        self._conn: http.client.HTTPConnection | None = None

    def report(self, progress: dict[str, Any]) -> None:
        """``{"records_total"}`` (the driver) or ``{"partition", "attempt", "done", "put"}``
        (a task attempt's totals so far), with retries."""
        if not self._path:
            return
        for attempt in range(RETRIES):
            try:
                status, content = self._request(progress)
            except (OSError, http.client.HTTPException):
                if attempt == RETRIES - 1:
                    raise
            else:
                if status not in (429, 503) or attempt == RETRIES - 1:
                    break
            time.sleep(0.2 * 2**attempt)  # back-off between retries of a failed request
        if status >= 300:
            try:
                detail = json.loads(content)
                text = f"{detail.get('code')}: {detail.get('message')} {detail.get('errors') or ''}".strip()
            except ValueError:
                text = content[:500].decode(errors="replace")
            raise ProgressError(f"POST {self._path} answered {status} {text}")

    def _request(self, payload: dict[str, Any]) -> tuple[int, bytes]:
        if self._conn is None:
            self._conn = self._factory(self._host, self._port, timeout=self._timeout)
        try:
            self._conn.request(
                "POST", self._prefix + self._path, body=json.dumps(payload).encode(), headers=self._headers
            )
            response = self._conn.getresponse()
            return response.status, response.read()
        except (OSError, http.client.HTTPException):
            self.close()
            raise

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> "ProgressReporter":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

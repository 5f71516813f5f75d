"""How a Spark job puts messages on the platform: batch puts pipelined over a session.

Everything the ingest sends goes through :class:`PlatformTarget`: its :meth:`~PlatformTarget.writer`
puts batches over a WebSocket session (``/api/session/``, through ``baton_client``'s session
transport), and its :meth:`~PlatformTarget.reporter` sends the ingest's live counters
(:mod:`spark_jobs.progress`). The token comes from the environment (``BATON_API_TOKEN``),
never from the command line, which other users can read. No Django: executors need PySpark
and ``baton-client`` (clients/python) only.

:class:`SessionWriter` keeps up to ``in_flight`` batch puts sent and unanswered. The session
applies them in the order sent, each one database transaction on the platform that takes
the batch's ``dedup_key``s and puts only the messages whose key the queue has not taken
before; its reply lists the others as ``duplicates``. A session that drops (or a reply that
does not come in time) leaves every batch still in flight unknown: put or not. The writer
opens a new session and sends them all again, in order; the keys make that safe: a batch
the platform had put answers with every message a duplicate.
"""

from __future__ import annotations

import os
import time
from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Callable

from baton_client.errors import BatonError, NetworkError, Throttled
from baton_client.session import Session

from spark_jobs.progress import ProgressReporter

#: Batch puts a task keeps sent and unanswered.
IN_FLIGHT = 4
#: Times a batch is sent before its task fails (a new session each time it went unanswered).
ATTEMPTS = 5
#: Seconds to wait for a batch's reply once it is the oldest in flight.
REPLY_TIMEOUT_S = 120.0


class PlatformError(RuntimeError):
    """The platform refused a request, or could not be reached; the message says which."""


@dataclass(frozen=True)
class BatchOutcome:
    sent: int  # messages in the batch
    put: int  # messages put by it; the others' dedup_keys the queue had already taken


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

    def writer(
        self, *, in_flight: int = IN_FLIGHT, answered: Callable[[BatchOutcome], None] = lambda outcome: None
    ) -> "SessionWriter":
        """A session putting batches on the queue; ``answered`` is called with each batch's
        outcome, in the order the batches were given."""
        return SessionWriter(self, in_flight=in_flight, answered=answered)

    def reporter(self) -> ProgressReporter:
        """Where the job reports the progress of the ingest it runs for (nowhere when alone)."""
        return ProgressReporter(self.url, self.token, self.ingest_id)


class SessionWriter:
    """Batch puts pipelined over one session at a time (see the module's text). Use it as a
    context manager; :meth:`drain` before the end waits for every reply."""

    def __init__(self, target: PlatformTarget, *, in_flight: int, answered: Callable[[BatchOutcome], None]) -> None:
        if in_flight < 1:
            raise ValueError("in_flight must be at least 1.")
        self.target, self.in_flight, self.answered = target, in_flight, answered
        self.sent = 0  # batches given to put()
        self._session: Session | None = None
        self._pending: deque[tuple[list[dict[str, Any]], Future]] = deque()

    def __enter__(self) -> "SessionWriter":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Close the session; batches still in flight are left to the platform (the retried
        task's keys settle them)."""
        if self._session is not None:
            self._session.close()
            self._session = None

    def put(self, messages: list[dict[str, Any]]) -> None:
        """Send a batch of API message objects (each with a ``dedup_key``); first wait for the
        oldest reply if ``in_flight`` batches are unanswered."""
        while len(self._pending) >= self.in_flight:
            self._settle_oldest()
        self._pending.append((messages, self._send(messages)))
        self.sent += 1

    def drain(self) -> None:
        """Wait for the reply to every batch sent."""
        while self._pending:
            self._settle_oldest()

    def _send(self, messages: list[dict[str, Any]]) -> Future:
        if self._session is None:
            self._session = Session(
                self.target.url, self.target.token, timeout=REPLY_TIMEOUT_S, user_agent="baton-spark-ingest"
            )
        try:
            return self._session.send(
                "put", {"broker": self.target.broker, "queue": self.target.queue, "messages": messages}
            )
        except NetworkError as exc:  # the session could not be opened: settled like a drop
            failed: Future = Future()
            failed.set_exception(exc)
            return failed

    def _settle_oldest(self) -> None:
        """Read the oldest batch's reply and report its outcome; when no reply can come, send
        everything in flight again on a new session."""
        for attempt in range(1, ATTEMPTS + 1):
            messages, future = self._pending[0]
            try:
                body = self._session.result("put", future)
            except BatonError as exc:
                if not _retryable(exc):
                    raise PlatformError(
                        f"put of {len(messages)} messages on {self.target.broker}/"
                        f"{self.target.queue} answered {exc.status} {exc.code}: {exc.message}"
                    ) from exc
                if attempt == ATTEMPTS:
                    raise PlatformError(
                        f"put of {len(messages)} messages: no answer after {ATTEMPTS} tries ({exc.code}: {exc.message})"
                    ) from exc
                self._resent(backoff=0.2 * 2 ** (attempt - 1))
                continue
            self._pending.popleft()
            self.answered(BatchOutcome(sent=len(messages), put=len(body["messages"])))
            return

    def _resent(self, *, backoff: float) -> None:
        """A new session, and every batch in flight sent on it again, in order."""
        self.close()
        time.sleep(backoff)  # back-off before reconnecting to a platform that just dropped us
        batches = [messages for messages, _ in self._pending]
        self._pending.clear()
        for messages in batches:
            self._pending.append((messages, self._send(messages)))


def _retryable(error: BatonError) -> bool:
    """No answer (the session dropped, the reply did not come), or the platform asked to
    come back later (429 throttled, 503)."""
    return isinstance(error, (NetworkError, Throttled)) or error.status == 503

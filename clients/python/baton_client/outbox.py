"""The client's durable outbox (store and forward): ``Client(url, token, outbox="PATH")``.

A persistent put outside a unit of work that cannot reach the platform (the connection is
refused or breaks, no answer within the timeout, or a proxy answers 502, 503 or 504) is
written to a local SQLite file, synced to disk before the put returns, and answered at once
with ``queued=True``. Later puts to the same queue, while messages of that queue wait, go
behind them: each queue's order is kept. What waits is forwarded as soon as the platform
answers: by the next call that gets an answer, by a background thread that retries with
exponential back-off, or by :meth:`Outbox.flush`.

Exactly once. Every put an outbox client makes outside a unit of work carries a duplicate-
detection key (``dedup_key``, assigned here unless the caller gave one, remembered by the
queue for ``key_retention`` seconds: ``dedup_retention_ms``), from its first attempt on. A
forward whose answer was lost (or a put that timed out, or a forwarder killed between
sending and recording) is sent again with the same key, and the platform skips it as a
duplicate: never a second copy. The outbox must not outlive that retention: a message
older than ``MAX_AGE_SHARE`` of it is not forwarded but moved to ``failed`` (code
``dedup_window_passed``) rather than risk a second copy.

One forwarder at a time: forwarding holds an OS lock on ``PATH.lock`` (``flock``; released
by the OS if the process dies), so two clients on one file, in one process or two, never
forward the same message twice. Kept messages go in batches (``{"messages": [...]}``, each
with its own key) of consecutive messages of one queue; a batch the platform refuses (4xx)
is sent again one message at a time, so that only the refused message lands in ``failed``
(with its error, not retried) and the queue's next message goes on.

Standard library only (sqlite3, threading, fcntl where there is one).
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

from .errors import BatonError, NetworkError, OutboxFull, Throttled

if TYPE_CHECKING:  # the client imports this module
    from .client import Client, Message

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: msvcrt's byte-range lock instead
    fcntl = None  # type: ignore[assignment]
    import msvcrt

__all__ = ["Outbox", "FailedMessage", "unreachable", "DEFAULT_MAX_MESSAGES", "DEFAULT_MAX_BYTES"]

#: The default size limit: messages kept at once, and their bytes (the JSON of each).
DEFAULT_MAX_MESSAGES = 100_000
DEFAULT_MAX_BYTES = 256 * 1024 * 1024
#: How long the platform remembers each key the outbox assigns (seconds; 7 days).
DEFAULT_KEY_RETENTION_S = 7 * 24 * 3600.0
#: A message older than this share of its key's retention is not forwarded (``failed``).
MAX_AGE_SHARE = 0.9
#: The most messages, and about the most bytes, a forward sends in one put.
BATCH_MESSAGES = 100
BATCH_BYTES = 1024 * 1024
#: The back-off after the platform could not be reached: first wait, factor and longest wait (seconds), and
#: how often it looks at the file when idle (a message another client left there).
BACKOFF_FIRST, BACKOFF_FACTOR, BACKOFF_MAX, IDLE_LOOK = 0.2, 2.0, 30.0, 5.0
#: The statuses of a proxy or load balancer whose platform is not there.
UNREACHABLE_STATUSES = frozenset({502, 503, 504})
#: An assigned key: this prefix and 22 random URL-safe characters (128 bits). The platform
#: counts a key against the message length limit: 25 characters.
KEY_PREFIX = "ob-"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS waiting (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    broker TEXT NOT NULL,
    queue TEXT NOT NULL,
    put_application TEXT,
    message TEXT NOT NULL,
    bytes INTEGER NOT NULL,
    kept_at REAL NOT NULL,
    max_age_s REAL
);
CREATE INDEX IF NOT EXISTS waiting_queue ON waiting (broker, queue, seq);
CREATE TABLE IF NOT EXISTS failed (
    seq INTEGER PRIMARY KEY,
    broker TEXT NOT NULL,
    queue TEXT NOT NULL,
    put_application TEXT,
    message TEXT NOT NULL,
    kept_at REAL NOT NULL,
    failed_at REAL NOT NULL,
    code TEXT NOT NULL,
    status INTEGER,
    error TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS totals (one INTEGER PRIMARY KEY CHECK (one = 1), messages INTEGER, bytes INTEGER);
INSERT OR IGNORE INTO totals VALUES (1, 0, 0);
CREATE TRIGGER IF NOT EXISTS waiting_in AFTER INSERT ON waiting BEGIN
    UPDATE totals SET messages = messages + 1, bytes = bytes + NEW.bytes;
END;
CREATE TRIGGER IF NOT EXISTS waiting_out AFTER DELETE ON waiting BEGIN
    UPDATE totals SET messages = messages - 1, bytes = bytes - OLD.bytes;
END;
"""


def unreachable(error: BaseException) -> bool:
    """Whether ``error`` says the platform could not be reached (kept and retried), as
    opposed to an answer (a refusal, or a success)."""
    return isinstance(error, NetworkError) or (isinstance(error, BatonError) and error.status in UNREACHABLE_STATUSES)


@dataclass
class FailedMessage:
    """A kept message the platform refused while it was forwarded (not retried): where it
    was going, its fields (``message``: body or body_base64, descriptor, ``dedup_key``) and
    the error (``code``, ``status``, ``error``)."""

    seq: int
    broker: str
    queue: str
    message: dict[str, Any]
    code: str
    status: int | None
    error: str
    kept_at: float
    failed_at: float
    put_application: str | None = None
    extra: dict[str, Any] = field(default_factory=dict, repr=False)


class _FileLock:
    """An exclusive OS lock on a file, taken without blocking (None when another holder has
    it). ``flock`` locks belong to the open file: two in one process exclude each other too."""

    def __init__(self, path: str) -> None:
        self.path = path

    def take(self) -> int | None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            else:  # pragma: no cover - Windows
                msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            os.close(fd)
            return None
        return fd

    @staticmethod
    def give(fd: int) -> None:
        os.close(fd)  # closing the file releases its lock


class Outbox:
    """A durable outbox in the SQLite file ``path`` (created if absent). ``client`` forwards
    (None: only to look at what waits and what failed). ``max_messages``/``max_bytes``: the
    size limit (a put that would pass it raises :class:`OutboxFull`); ``key_retention``:
    seconds the platform remembers each assigned key; ``forward_thread``: run the
    background forwarder."""

    def __init__(
        self,
        path: str | os.PathLike,
        client: "Client | None" = None,
        *,
        max_messages: int = DEFAULT_MAX_MESSAGES,
        max_bytes: int = DEFAULT_MAX_BYTES,
        key_retention: float = DEFAULT_KEY_RETENTION_S,
        forward_thread: bool = True,
    ) -> None:
        if max_messages < 1 or max_bytes < 1:
            raise ValueError("outbox_max_messages and outbox_max_bytes must be at least 1.")
        if not 1 <= key_retention * 1000 <= 315_360_000_000:
            raise ValueError("outbox_key_retention must be from 1 ms to ten years (in seconds).")
        self.path = os.fspath(path)
        self.max_messages, self.max_bytes, self.key_retention = max_messages, max_bytes, key_retention
        self._client = client
        self._db_lock = threading.RLock()
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")  # a kept message is on disk when the put returns
        self._db.executescript(_SCHEMA)
        self._file_lock = _FileLock(self.path + ".lock")
        self._forwarding = threading.Lock()  # this object's forwarders, before the OS lock
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._closed = False
        #: Something may wait (this client kept a message, or found some): a put then looks
        #: for its queue in the file, and an answer from the platform wakes the forwarder.
        self._hint = self.depth > 0
        #: Back-off: puts are kept without trying, and the forwarder waits, until _down_until.
        self._backoff, self._down_until = BACKOFF_FIRST, 0.0
        #: The last error that stopped a forward (the platform unreachable, or busy).
        self.last_error: BaseException | None = None
        self._thread: threading.Thread | None = None
        if client is not None and forward_thread:
            self._thread = threading.Thread(target=self._run, name="baton-outbox-forwarder", daemon=True)
            self._thread.start()

    def __repr__(self) -> str:
        return f"Outbox({self.path!r}, depth={self.depth})"

    # -- what waits ----------------------------------------------------------------------
    @property
    def depth(self) -> int:
        """How many messages wait to be forwarded (every client's on this file)."""
        with self._db_lock:
            return self._db.execute("SELECT messages FROM totals").fetchone()[0]

    @property
    def size(self) -> int:
        """The bytes the waiting messages take (their JSON)."""
        with self._db_lock:
            return self._db.execute("SELECT bytes FROM totals").fetchone()[0]

    @property
    def failed(self) -> list[FailedMessage]:
        """The messages the platform refused while they were forwarded, oldest first."""
        with self._db_lock:
            rows = self._db.execute(
                "SELECT seq, broker, queue, message, code, status, error, kept_at, failed_at, put_application"
                " FROM failed ORDER BY seq"
            ).fetchall()
        return [
            FailedMessage(seq, b, q, json.loads(m), code, status, error, kept, failed_at, app)
            for seq, b, q, m, code, status, error, kept, failed_at, app in rows
        ]

    def failed_clear(self, seqs: list[int] | None = None) -> int:
        """Forget failed messages (those of ``seqs``, or all); returns how many."""
        with self._db_lock:
            if seqs is None:
                return self._db.execute("DELETE FROM failed").rowcount
            return self._db.executemany("DELETE FROM failed WHERE seq = ?", [(s,) for s in seqs]).rowcount

    # -- putting -------------------------------------------------------------------------
    @staticmethod
    def takes(payload: Mapping[str, Any], many: bool) -> bool:
        """Whether a put may be kept: outside a unit of work (no transaction, connection or
        syncpoint other than "no") and no message asked to be non-persistent."""
        if any(payload.get(name) is not None for name in ("transaction", "connection")):
            return False
        if payload.get("syncpoint") not in (None, "no"):
            return False
        messages = payload["messages"] if many else (payload,)
        return all(m.get("persistence") != "non_persistent" for m in messages)

    def put(self, broker: str, queue: str, payload: dict[str, Any], *, many: bool) -> Any:
        """A put through the outbox (``Client.put`` calls it for a put it :meth:`takes`):
        keys assigned; the queue's waiting messages forwarded first; then the put sent, or
        kept if the platform cannot be reached (or the queue still has messages waiting)."""
        client = self._client
        assert client is not None
        messages = payload["messages"] if many else [payload]
        for message in messages:
            if not message.get("dedup_key"):
                message["dedup_key"] = KEY_PREFIX + secrets.token_urlsafe(16)
                message["dedup_retention_ms"] = round(self.key_retention * 1000)
        if self._hint and self._waits(broker, queue):
            if not self._down():
                self._forward(only=(broker, queue), wait=client.timeout)
            if self._waits(broker, queue):
                return self._kept(broker, queue, payload, messages, many=many, cause=None)
        if self._down():  # unreachable a moment ago (within the back-off): kept without trying
            return self._kept(broker, queue, payload, messages, many=many, cause=None)
        try:
            return client._put_now(broker, queue, payload, many=many)
        except BatonError as exc:
            if not unreachable(exc):
                raise
            self.last_error = exc
            self._unreached()
            return self._kept(broker, queue, payload, messages, many=many, cause=exc)

    def _waits(self, broker: str, queue: str) -> bool:
        with self._db_lock:
            found = self._db.execute(
                "SELECT 1 FROM waiting WHERE broker = ? AND queue = ? LIMIT 1", (broker, queue)
            ).fetchone()
        return found is not None

    def _kept(
        self,
        broker: str,
        queue: str,
        payload: Mapping[str, Any],
        messages: list[dict[str, Any]],
        *,
        many: bool,
        cause: BaseException | None,
    ) -> Any:
        """Write the messages to the file (one transaction, synced) and answer as queued."""
        now = time.time()
        app = payload.get("put_application")
        rows = []
        for message in messages:
            fields = {k: v for k, v in message.items() if k not in ("bodies",)}
            if not many:
                fields = {k: v for k, v in fields.items() if k not in ("transaction", "syncpoint", "connection")}
                fields.pop("put_application", None)
            text = json.dumps(fields, separators=(",", ":"))
            retention = fields.get("dedup_retention_ms")
            max_age = None if retention is None else retention / 1000 * MAX_AGE_SHARE
            rows.append((broker, queue, app, text, len(text), now, max_age))
        added = sum(r[4] for r in rows)
        with self._db_lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                count, size = self._db.execute("SELECT messages, bytes FROM totals").fetchone()
                if count + len(rows) > self.max_messages or size + added > self.max_bytes:
                    raise OutboxFull(
                        f"The outbox {self.path} is full: {count} messages ({size} bytes) wait, the limit is "
                        f"{self.max_messages} messages and {self.max_bytes} bytes; this put was not kept.",
                        depth=count,
                        bytes=size,
                        max_messages=self.max_messages,
                        max_bytes=self.max_bytes,
                    ) from cause
                self._db.executemany(
                    "INSERT INTO waiting (broker, queue, put_application, message, bytes, kept_at, max_age_s)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?)",
                    rows,
                )
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        if not self._hint:
            self._hint = True
            self._wake.set()  # the forwarder: from idle to back-off
        from .client import Message

        def queued(message: Mapping[str, Any]) -> "Message":
            fields = {k: v for k, v in message.items() if k != "bodies"}
            result = Message.from_json({**fields, "msg_id": None, "broker": broker, "queue": queue})
            result.queued = True
            return result

        return [queued(m) for m in messages] if many else queued(messages[0])

    # -- forwarding ----------------------------------------------------------------------
    def answered(self) -> None:
        """The platform answered a call: the back-off starts again, and the forwarder wakes
        if something may wait."""
        if self._down_until:
            self._down_until, self._backoff = 0.0, BACKOFF_FIRST
        if self._hint and not self._wake.is_set():
            self._wake.set()

    def _unreached(self) -> None:
        """The platform could not be reached: puts are kept without trying, and the
        forwarder waits, for the back-off, which doubles (up to BACKOFF_MAX)."""
        self._down_until = time.monotonic() + self._backoff
        self._backoff = min(self._backoff * BACKOFF_FACTOR, BACKOFF_MAX)

    def _down(self) -> bool:
        return bool(self._down_until) and time.monotonic() < self._down_until

    def flush(self, timeout: float | None = 30.0) -> int:
        """Forward what waits now, retrying with back-off until it is all forwarded or
        ``timeout`` seconds have passed (0: one round; None: no limit); returns how many
        messages are left."""
        if self._client is None:
            raise RuntimeError("This outbox has no client to forward with: open it as Client(..., outbox=PATH).")
        deadline = None if timeout is None else time.monotonic() + timeout
        backoff = BACKOFF_FIRST  # its own: a caller waiting wants the next try soon
        while True:
            left = self._forward(deadline=deadline)
            if left < 0:  # another forwarder has the file: what waits is what it has not sent yet
                left = self.depth
            if left == 0 or (deadline is not None and time.monotonic() >= deadline):
                return left
            wait = backoff if deadline is None else min(backoff, max(0.0, deadline - time.monotonic()))
            if self._stop.wait(wait):  # closing: stop retrying
                return self.depth
            backoff = min(backoff * BACKOFF_FACTOR, BACKOFF_MAX)

    def _run(self) -> None:
        """The background forwarder: forward when woken (a first message kept, the platform
        answered) or when the back-off ends; look at the file now and then when idle (a
        message another client left there, or one another forwarder has not sent)."""
        busy = 0.0  # another forwarder had the file: look again after this long
        while not self._stop.is_set():
            if busy:
                wait = busy
            elif self._hint:
                wait = max(0.0, self._down_until - time.monotonic()) if self._down_until else 0.0
            else:
                wait = IDLE_LOOK
            self._wake.wait(wait)
            self._wake.clear()
            if self._stop.is_set():
                return
            if self._hint and self._down():
                continue  # woken early by a put kept while the platform is unreachable
            try:
                left = self._forward()
            except Exception:  # noqa: BLE001 - the thread must live on: after a back-off, again
                self._unreached()
                continue
            busy = min(max(busy * BACKOFF_FACTOR, BACKOFF_FIRST), IDLE_LOOK) if left < 0 else 0.0

    def _forward(self, *, only: tuple[str, str] | None = None, deadline: float | None = None, wait: float = 0) -> int:
        """One round: take the forwarding lock (this object's, waiting up to ``wait`` seconds
        for another thread's round to end; then the file's, not waiting) and forward every
        queue's waiting messages (or only ``only``'s), in order, until the platform cannot be
        reached; returns how many wait then (-1 if another forwarder had the lock)."""
        taken = self._forwarding.acquire(timeout=wait) if wait > 0 else self._forwarding.acquire(blocking=False)
        if not taken:
            return -1
        try:
            fd = self._file_lock.take()
            if fd is None:
                return -1  # another client forwards this file
            try:
                return self._forward_locked(only, deadline)
            finally:
                _FileLock.give(fd)
        finally:
            self._forwarding.release()

    def _forward_locked(self, only: tuple[str, str] | None, deadline: float | None) -> int:
        self._expired_failed()
        with self._db_lock:
            if only is not None:
                queues = [only]
            else:
                queues = self._db.execute(
                    "SELECT broker, queue FROM waiting GROUP BY broker, queue ORDER BY min(seq)"
                ).fetchall()
        sent = 0
        for broker, queue in queues:
            while not self._stop.is_set() and not (sent and deadline is not None and time.monotonic() >= deadline):
                batch = self._batch(broker, queue)
                if not batch:
                    break
                if not self._send(broker, queue, batch):
                    return self._left()
                sent += 1
        return self._left()

    def _left(self) -> int:
        left = self.depth
        self._hint = left > 0  # messages another client left count too: puts go behind them
        return left

    def _batch(self, broker: str, queue: str) -> list[tuple[int, str | None, str]]:
        """The queue's oldest waiting messages that go in one put: consecutive, of one
        put_application, up to BATCH_MESSAGES and about BATCH_BYTES."""
        with self._db_lock:
            rows = self._db.execute(
                "SELECT seq, put_application, message, bytes FROM waiting WHERE broker = ? AND queue = ?"
                " ORDER BY seq LIMIT ?",
                (broker, queue, BATCH_MESSAGES),
            ).fetchall()
        batch: list[tuple[int, str | None, str]] = []
        size = 0
        for seq, app, text, length in rows:
            if batch and (app != batch[0][1] or size + length > BATCH_BYTES):
                break
            batch.append((seq, app, text))
            size += length
        return batch

    def _send(self, broker: str, queue: str, batch: list[tuple[int, str | None, str]]) -> bool:
        """Forward one batch; False when the platform cannot be reached (or asks to slow
        down): the round ends. A refused batch goes again a message at a time."""
        client = self._client
        assert client is not None
        payload: dict[str, Any] = {"messages": [json.loads(text) for _, _, text in batch], "bodies": "none"}
        if batch[0][1] is not None:
            payload["put_application"] = batch[0][1]
        try:
            client._forward_put(broker, queue, payload)
        except BatonError as exc:
            if unreachable(exc) or isinstance(exc, Throttled) or (exc.status or 0) >= 500:
                self.last_error = exc
                self._unreached()
                return False
            if len(batch) > 1:
                return all(self._send(broker, queue, [row]) for row in batch)
            self._failed(batch[0][0], exc)
            return True
        with self._db_lock:
            self._db.execute("BEGIN IMMEDIATE")
            self._db.executemany("DELETE FROM waiting WHERE seq = ?", [(seq,) for seq, _, _ in batch])
            self._db.execute("COMMIT")
        return True

    def _failed(self, seq: int, error: BatonError, *, code: str | None = None) -> None:
        """Move a waiting message to ``failed`` with its error (one transaction)."""
        with self._db_lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.execute(
                    "INSERT INTO failed (seq, broker, queue, put_application, message, kept_at, failed_at, code,"
                    " status, error) SELECT seq, broker, queue, put_application, message, kept_at, ?, ?, ?, ?"
                    " FROM waiting WHERE seq = ?",
                    (time.time(), code or error.code, error.status, error.message, seq),
                )
                self._db.execute("DELETE FROM waiting WHERE seq = ?", (seq,))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def _expired_failed(self) -> None:
        """Messages kept longer than their key is surely remembered: to ``failed``."""
        now = time.time()
        with self._db_lock:
            old = self._db.execute(
                "SELECT seq, kept_at, max_age_s FROM waiting WHERE max_age_s IS NOT NULL AND kept_at + max_age_s < ?",
                (now,),
            ).fetchall()
        for seq, kept_at, max_age in old:
            error = BatonError(
                f"Kept {now - kept_at:.0f} s, past {max_age:.0f} s ({MAX_AGE_SHARE:.0%} of its key's retention): "
                "forwarding it now could make a second copy, so it was not forwarded."
            )
            error.status = None
            self._failed(seq, error, code="dedup_window_passed")

    # -- the end -------------------------------------------------------------------------
    def stop(self) -> None:
        """Stop the background forwarder (without waiting for it: see :meth:`join`)."""
        self._stop.set()
        self._wake.set()

    def join(self, timeout: float | None = None) -> None:
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def close(self) -> None:
        """Stop the forwarder, wait for it (a forward under way ends with its answer, or
        with the client's timeout), and close the file (what waits stays in it)."""
        if self._closed:
            return
        self.stop()
        self.join(None if self._client is None else self._client.timeout + 5)
        self._closed = True
        with self._db_lock:
            self._db.close()

    def __enter__(self) -> "Outbox":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

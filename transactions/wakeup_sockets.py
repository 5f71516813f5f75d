"""Wake-ups on the embedded default, with no server: local datagram sockets.

Every process that waits binds a Unix datagram socket in a directory of its own database
(``<var>/wakeups/<database>/<pid>-<random>.sock``); a committing process sends the keys
to every socket there, right after its commit. A socket whose process is gone refuses
the datagram and is removed by the sender. Datagrams on a Unix socket are not dropped
while the receiver's buffer has room; if a receiver does not read for ``SEND_TIMEOUT_S``
(stopped, starved) the sender gives that datagram up and marks the socket, and its next
datagram to it starts with ``*``, which wakes every waiter there (each re-checks once).
"""

from __future__ import annotations

import atexit
import errno
import os
import secrets
import socket
import tempfile
import threading
import time
from pathlib import Path

from django.conf import settings

from .wakeup_bus import STOP_CHECK_S, ListenerBus, payload_deliver, payload_encode

SEND_TIMEOUT_S = 0.2
#: How long the socket directory must have been unchanged before its listing is reused.
SETTLED_NS = 100_000_000
RECEIVE_BUFFER = 1 << 20
#: Longest path a Unix socket address takes (Linux: 108 bytes with the final NUL).
MAX_SOCKET_PATH = 107


def socket_directory(scope: str) -> Path:
    """Under var/ when the path fits in a socket address, else under the temporary directory."""
    preferred = Path(settings.VAR_DIR) / "wakeups" / scope
    if len(str(preferred / "4194304-0123456789abcdef.sock")) <= MAX_SOCKET_PATH:
        return preferred
    return Path(tempfile.gettempdir()) / "baton-wakeups" / scope


class SocketBus(ListenerBus):
    name = "sockets"

    def __init__(self, *, scope: str) -> None:
        super().__init__()
        self.directory = socket_directory(scope)
        self.path: Path | None = None
        self.receiver: socket.socket | None = None
        self._sender: socket.socket | None = None
        self._send_lock = threading.Lock()
        self._missed: set[str] = set()
        self._listed: tuple[int, list[str]] | None = None  # (the directory's mtime, its entries)

    # --- sending ------------------------------------------------------------------------------
    def publish_after_commit(self, keys: list[str]) -> None:
        names = self._listeners()
        if names is None:
            return  # nobody has ever listened
        own = self.path.name if self.path else None
        payload = payload_encode(keys)
        with self._send_lock:
            if self._sender is None:
                self._sender = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                self._sender.settimeout(SEND_TIMEOUT_S)
            for name in names:
                if name == own or not name.endswith(".sock"):
                    continue
                self._send(str(self.directory / name), payload)

    def _listeners(self) -> list[str] | None:
        """The directory's entries, listed again only when it may have changed: one ``stat``
        per commit instead of a listing. A socket bound or removed changes the directory's
        modification time, but that time has the kernel's coarse clock tick: a listing is
        kept only once the directory has not changed for ``SETTLED_NS``, so that a socket
        bound within the same tick as the listing is never missed."""
        try:
            changed = os.stat(self.directory).st_mtime_ns
        except FileNotFoundError:
            return None
        listed = self._listed
        if listed is not None and listed[0] == changed:
            return listed[1]
        try:
            names = os.listdir(self.directory)
        except FileNotFoundError:
            return None
        if time.time_ns() - changed > SETTLED_NS:
            self._listed = (changed, names)
        return names

    def _send(self, path: str, payload: str) -> None:
        if path in self._missed:
            payload = "* " + payload
        try:
            self._sender.sendto(payload.encode(), path)
            self._missed.discard(path)
        except (ConnectionRefusedError, FileNotFoundError):
            self._missed.discard(path)
            try:
                os.unlink(path)  # its process is gone
            except FileNotFoundError:
                pass
        except (TimeoutError, BlockingIOError):
            self._missed.add(path)  # its reader is stuck: it hears "wake all" next time
        except OSError as exc:
            if exc.errno != errno.EMSGSIZE:
                raise
            self._sender.sendto(b"*", path)

    # --- listening ----------------------------------------------------------------------------
    def connect(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        if self.receiver is None:  # bound once per process; a datagram socket never disconnects
            receiver = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            receiver.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECEIVE_BUFFER)
            receiver.settimeout(STOP_CHECK_S)
            path = self.directory / f"{os.getpid()}-{secrets.token_hex(8)}.sock"
            receiver.bind(str(path))
            self.receiver, self.path = receiver, path
            atexit.register(self._unbind)

    def _unbind(self) -> None:
        if self.path is not None and self.path.name.startswith(f"{os.getpid()}-"):
            self.path.unlink(missing_ok=True)

    def receive_forever(self) -> None:
        while not self.stopping:
            try:
                data = self.receiver.recv(1 << 17)
            except TimeoutError:
                continue
            payload_deliver(data.decode(errors="replace"))

    def disconnect(self) -> None:
        if self.stopping and self.receiver is not None:
            self.receiver.close()
            self._unbind()
            self.receiver = None

    def describe(self) -> str:
        return f"Unix datagram sockets in {self.directory}"

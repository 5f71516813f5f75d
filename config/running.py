"""Whether the platform runs, for ``manage.py baton restore`` (docs/operating.md, "Backup and
restore"): every web server, Celery worker and beat process holds a shared ``flock`` on
``BATON_PLATFORM_LOCK`` (``BATON_VAR_DIR/platform.lock``) for its life. The kernel releases
it when the process ends, however it ends (killed too), so no stale pid file can lie. A
restore takes the lock exclusively without waiting: refused while any of them runs, and a
process starting meanwhile waits for the restore to end.

It sees the processes that share the var directory (one machine, or a shared volume); on
PostgreSQL the restore also refuses while another session is connected to the database."""

from __future__ import annotations

import fcntl
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from django.conf import settings

from baton_client.errors import Conflict

_held = None


def platform_lock_hold() -> None:
    """Hold the platform lock, shared, for the rest of this process's life (once)."""
    global _held
    if _held is not None:
        return
    path = Path(settings.BATON_PLATFORM_LOCK)
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = open(path, "a+")  # noqa: SIM115 - held until the process ends
    os.set_inheritable(lock.fileno(), False)
    fcntl.flock(lock, fcntl.LOCK_SH)  # waits while a restore holds it
    _held = lock


@contextmanager
def platform_stopped() -> Iterator[None]:
    """The platform lock, exclusive, for the block; Conflict at once while any process of
    the platform holds it."""
    path = Path(settings.BATON_PLATFORM_LOCK)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise Conflict(
                f"The platform is running: a web server, STOMP server, worker or beat process holds {path}. "
                "Stop it (Ctrl-C ./platform/up, or docker compose stop) and run the restore again; nothing was changed."
            ) from None
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)

"""Process heartbeats for the overview's health table (``dashboard.ProcessBeat``): who
writes them is in the model's docstring; nothing else records whether a worker or beat
is alive."""

from __future__ import annotations

import os
import socket
import time
from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from ..models import ProcessBeat

#: A row silent this long is deleted (a process that stopped for good).
FORGET = timedelta(days=1)
#: When this process started (time of import: before a worker's pool forks, in each web
#: process and in beat).
STARTED = timezone.now()
_last: dict[str, float] = {}


def process_beat(*, kind: str, name: str | None = None, started_at: datetime | None = None) -> bool:
    """Record that this process (``kind``; ``name`` defaults to host:pid) is alive now, at
    most once per half ``BATON_DASHBOARD_HEARTBEAT_S`` per name. Returns whether it wrote."""
    host, pid = socket.gethostname(), os.getpid()
    name = name or f"{host}:{pid}"
    now = time.monotonic()
    if now - _last.get(f"{kind}/{name}", -1e9) < settings.BATON_DASHBOARD_HEARTBEAT_S / 2:
        return False
    _last[f"{kind}/{name}"] = now
    ProcessBeat.objects.update_or_create(
        kind=kind,
        name=name,
        defaults={"host": host, "pid": pid, "seen_at": timezone.now(), "started_at": started_at or STARTED},
    )
    return True


def process_beat_forget(*, kind: str, name: str | None = None) -> None:
    """Delete this process's row (``name`` defaults to host:pid): it stops cleanly."""
    name = name or f"{socket.gethostname()}:{os.getpid()}"
    ProcessBeat.objects.filter(kind=kind, name=name).delete()
    _last.pop(f"{kind}/{name}", None)


def process_beats_forget() -> int:
    """Delete the rows silent for a day; returns how many."""
    return ProcessBeat.objects.filter(seen_at__lt=timezone.now() - FORGET).delete()[0]

"""The live STOMP connections of this process, written to ``StompClient`` rows for the
dashboard: a thread per process compares a snapshot of them every ``INTERVAL_S`` seconds
with what it last wrote, and writes only what changed (so no frame pays for a database
write). When it starts it removes the rows of processes of this host that are gone."""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from datetime import datetime, timezone

from django.db import connections, transaction as db

log = logging.getLogger(__name__)
INTERVAL_S = 2.0
PROCESS = f"{socket.gethostname()}:{os.getpid()}"
_started = threading.Lock()
_thread: threading.Thread | None = None


def registry_started(live: dict) -> None:
    """Start this process's registry thread (once), over ``live`` (session -> connection)."""
    global _thread
    with _started:
        if _thread is None or not _thread.is_alive():
            _thread = threading.Thread(target=_run, args=(live,), name="stomp-registry", daemon=True)
            _thread.start()


def _snapshot(live: dict) -> dict[str, dict]:
    rows = {}
    for session, conn in list(live.items()):
        if conn.user is None or conn.closed:
            continue
        subs = [
            {"id": s.id, "destination": s.destination, "ack": s.ack, "unacknowledged": len(s.pending)}
            for s in list(conn.subscriptions.values())
        ]
        rows[session] = {
            "process": PROCESS,
            "transport": conn.kind,
            "peer": conn.peer[:100],
            "username": conn.user.get_username(),
            "broker": conn.broker,
            "version": conn.version,
            "connected_at": datetime.fromtimestamp(conn.connected_at, tz=timezone.utc),
            "subscriptions": subs,
            "open_transactions": len(conn.transactions),
        }
    return rows


def _gone_processes_removed() -> None:
    from .models import StompClient

    host = socket.gethostname()
    for process in (
        StompClient.objects.filter(process__startswith=f"{host}:").values_list("process", flat=True).distinct()
    ):
        pid = int(process.rpartition(":")[2] or 0)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            StompClient.objects.filter(process=process).delete()
        except PermissionError:
            pass


def registry_written(live: dict, written: dict[str, dict]) -> dict[str, dict]:
    """Write what changed since ``written`` (what was last written); return what is now."""
    from .models import StompClient

    now = _snapshot(live)
    if now != written:
        with db.atomic():
            StompClient.objects.filter(process=PROCESS).exclude(session__in=list(now)).delete()
            for session, row in now.items():
                if written.get(session) != row:
                    StompClient.objects.update_or_create(session=session, defaults=row)
    return now


def _run(live: dict) -> None:
    written: dict[str, dict] = {}
    try:
        _gone_processes_removed()
        while True:
            written = registry_written(live, written)
            connections.close_all()
            time.sleep(INTERVAL_S)  # the registry's pace: the dashboard's view may lag by this much
    except Exception:
        log.exception("the STOMP registry stopped")
    finally:
        connections.close_all()

"""The live STOMP connections of this process, written to ``StompClient`` rows for the
dashboard: a thread per process compares a snapshot of them every ``INTERVAL_S`` seconds
with what it last wrote, and writes only what changed (so no frame pays for a database
write). When it starts it removes the rows of processes of this host that are gone.

Each refresh also looks for the rows of this process that an operator asked to close
(``services.stomp_client_close``): such a connection is sent an ERROR "Closed by an
operator." after what it was already sent, and dropped (``registry_closes_applied``). So a
close from the console or REST takes effect within ``INTERVAL_S`` seconds."""

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
#: Sessions this process was asked to close and has told to close (each told once).
_closing: set[str] = set()


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


def registry_closes_applied(live: dict) -> list[str]:
    """Close this process's connections an operator asked to close; return their sessions.
    A marked row whose connection is gone already is removed."""
    from brokers.exceptions import ClosedByOperator

    from .models import StompClient

    asked = StompClient.objects.filter(process=PROCESS, close_requested_at__isnull=False)
    told = []
    for session, by in asked.values_list("session", "close_requested_by"):
        conn = live.get(session)
        if conn is None:
            StompClient.objects.filter(session=session).delete()
            _closing.discard(session)
        elif session not in _closing:
            _closing.add(session)
            log.info("closing STOMP connection %s: asked by %s", session, by or "an operator")
            # ERROR, then the close, after what the connection already received (its
            # thread applies it in order); the end then runs as when the client leaves
            conn._refused_now(ClosedByOperator("Closed by an operator."))
            told.append(session)
    _closing.intersection_update(list(live))
    return told


def _run(live: dict) -> None:
    written: dict[str, dict] = {}
    try:
        _gone_processes_removed()
        while True:
            written = registry_written(live, written)
            registry_closes_applied(live)
            connections.close_all()
            time.sleep(INTERVAL_S)  # the registry's pace: the dashboard's view may lag by this much
    except Exception:
        log.exception("the STOMP registry stopped")
    finally:
        connections.close_all()

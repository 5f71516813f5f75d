"""The console's alerts: the open queue performance events (docs/operating.md, "Queue
events") of the queues a user may see, as of the operating housekeeping's last evaluation,
and, for superusers, the worker nodes lost (docs/operating.md, "Worker loss"). Shown on the
overview and a broker's page when they load, then pushed with every overview frame
(``follower.py``, ``consumers.OverviewConsumer``): an alert comes and goes without a reload."""

from __future__ import annotations

from typing import Any

from brokers.operating.events import queue_events_open

from .access import Visibility
from .services.worker_loss import workers_lost


def alerts_open() -> list[dict[str, Any]]:
    """Every open alert, as JSON (what the follower pushes; each socket keeps the ones its
    user may see): ``event``, ``what``, ``since`` (ISO 8601), and ``broker`` and ``queue``
    for a queue's, ``worker`` for a worker node's."""
    alerts = []
    for state in queue_events_open():
        queue = state.queue
        base = {"broker": queue.broker.name, "queue": queue.name, "since": state.evaluated_at.isoformat()}
        if state.depth_high and queue.depth_high_pct:
            what = f"depth {state.depth} of {queue.max_depth}, at or over {queue.depth_high_pct}%"
            alerts.append({**base, "event": "queue_depth_high", "what": what})
        if state.service_high and queue.service_interval_ms:
            what = f"not served for over {queue.service_interval_ms} ms"
            alerts.append({**base, "event": "queue_service_interval_high", "what": what})
    for row in workers_lost():
        what = f"no heartbeat since {row.seen_at.isoformat(timespec='seconds')} (host {row.host}, pid {row.pid})"
        alerts.append({"event": "worker_lost", "worker": row.name, "what": what, "since": row.lost_at.isoformat()})
    return alerts


def alerts_seen(alerts: list[dict[str, Any]], seen: Visibility, *, broker: str | None = None) -> list[dict[str, Any]]:
    """The ``alerts`` ``seen`` shows: a queue's where the user may browse the queue (of
    ``broker`` alone when given), a worker's to superusers."""
    return [
        a
        for a in alerts
        if ("queue" in a and seen.queue(a["broker"], a["queue"]) and broker in (None, a["broker"]))
        or ("worker" in a and seen.everything)
    ]


def alerts_for(seen: Visibility, *, broker: str | None = None) -> list[dict[str, Any]]:
    """The open alerts ``seen`` shows now (of ``broker`` alone when given)."""
    return alerts_seen(alerts_open(), seen, broker=broker)

"""The console's alerts: the open queue performance events (docs/operating.md, "Queue
events") of the queues a user may see, as of the operating housekeeping's last evaluation."""

from __future__ import annotations

from brokers.operating.events import queue_events_open

from .access import Visibility


def alerts_for(seen: Visibility, *, broker: str | None = None) -> list[dict]:
    """One row per open alert (a queue's depth high, or its service interval exceeded) on the
    queues ``seen`` shows, of ``broker`` alone when given."""
    if broker is not None:
        brokers = frozenset({broker})
    else:
        brokers = None if seen.everything else seen.brokers | {b for b, _ in seen.queues}
    alerts = []
    for state in queue_events_open(brokers=brokers):
        queue = state.queue
        if not seen.queue(queue.broker.name, queue.name):
            continue
        base = {"broker": queue.broker.name, "queue": queue.name, "since": state.evaluated_at}
        if state.depth_high and queue.depth_high_pct:
            what = f"depth {state.depth} of {queue.max_depth}, at or over {queue.depth_high_pct}%"
            alerts.append({**base, "event": "queue_depth_high", "what": what})
        if state.service_high and queue.service_interval_ms:
            what = f"not served for over {queue.service_interval_ms} ms"
            alerts.append({**base, "event": "queue_service_interval_high", "what": what})
    return alerts

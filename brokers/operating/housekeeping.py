"""The operating housekeeping: what Celery beat runs every ``BATON_OPERATING_INTERVAL_S``
seconds (``brokers.tasks.operating_housekeep``) and ``manage.py baton housekeep`` runs once."""

from __future__ import annotations

from .dead_letters import dead_letter_bursts_evaluate
from .events import channel_events_evaluate, queue_events_evaluate
from .retention import retention_apply
from .traffic import traffic_fold


def operating_housekeep() -> dict[str, float]:
    """One pass: channel and queue performance events, dead-lettering bursts; the journal's put and get events
    folded into the metrics' totals (before retention, which removes only folded events);
    retention."""
    channel_events = channel_events_evaluate()
    return {
        "channel_events": channel_events,
        "queue_events": queue_events_evaluate(),
        "dead_letter_events": dead_letter_bursts_evaluate(),
        "traffic_folded": traffic_fold(),
        **retention_apply(),
    }

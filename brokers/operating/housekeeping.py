"""The operating housekeeping: what Celery beat runs every ``BATON_OPERATING_INTERVAL_S``
seconds (``brokers.tasks.operating_housekeep``) and ``manage.py baton housekeep`` runs once."""

from __future__ import annotations

from .traffic import traffic_fold


def operating_housekeep() -> dict[str, int]:
    """One pass: the journal's put and get events folded into the metrics' totals."""
    return {"traffic_folded": traffic_fold()}

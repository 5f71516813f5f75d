from __future__ import annotations

from baton_client.errors import NotFound

from .models import AnalyticsRun, BrokerAnalytics


def analytics_run_get(*, run_id: str) -> AnalyticsRun:
    try:
        return AnalyticsRun.objects.get(pk=run_id)
    except AnalyticsRun.DoesNotExist:
        raise NotFound(f"No analytics run {run_id!r}.", id=run_id) from None


def broker_analytics_get(*, broker: str) -> BrokerAnalytics | None:
    """The latest results for ``broker``, None before the first run that saw it."""
    return BrokerAnalytics.objects.filter(broker=broker).first()


def analytics_runs_latest(*, limit: int = 10):
    return AnalyticsRun.objects.order_by("-created_at")[:limit]

"""Analytics runs over the journal and their results, per broker."""

from __future__ import annotations

import uuid

from django.db import models


def run_id_new() -> str:
    return uuid.uuid4().hex


class RunState(models.TextChoices):
    #: Accepted; waiting for a worker.
    QUEUED = "queued"
    #: Exporting the journal or analysing it.
    RUNNING = "running"
    #: Results loaded.
    SUCCEEDED = "succeeded"
    #: Stopped; ``error`` says why (Spark's error when Spark failed).
    FAILED = "failed"


class RunTrigger(models.TextChoices):
    #: Celery beat's schedule.
    SCHEDULE = "schedule"
    #: ``POST /api/analytics/runs/`` or ``manage.py analytics_run``.
    REQUEST = "request"


class AnalyticsRun(models.Model):
    id = models.CharField(primary_key=True, max_length=32, default=run_id_new, editable=False)
    state = models.CharField(max_length=16, choices=RunState.choices, default=RunState.QUEUED)
    trigger = models.CharField(max_length=16, choices=RunTrigger.choices, default=RunTrigger.REQUEST)
    events_exported = models.BigIntegerField(default=0, help_text="Journal events this run's increment added.")
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"analytics run {self.id} ({self.state})"


class ExportWatermark(models.Model):
    """The one row (id 1) saying how far the journal has been exported, and which run holds
    the export (a lease, so two runs never export at once)."""

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    watermark = models.JSONField(null=True, blank=True, help_text="transactions.journal_export's watermark.")
    holder = models.CharField(max_length=32, blank=True)
    held_until = models.DateTimeField(null=True, blank=True)


class BrokerAnalytics(models.Model):
    """The latest results for one broker (replaced by every successful run)."""

    broker = models.CharField(max_length=48, primary_key=True)
    run = models.ForeignKey(AnalyticsRun, on_delete=models.CASCADE, related_name="+")
    computed_at = models.DateTimeField()
    #: ``{"broker": {...}, "queues": [...], "throughput": [...], "chains": [...]}``
    results = models.JSONField(default=dict)

    def __str__(self) -> str:
        return f"analytics of {self.broker} at {self.computed_at:%Y-%m-%d %H:%M:%S}"

"""Bulk ingests: a Spark job putting the records of staged files on a queue, once each."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models

#: The longest key retention an ingest may declare (ten years, as a message's expiry).
DEDUP_RETENTION_DAYS_MAX = 3650


def ingest_id_new() -> str:
    return uuid.uuid4().hex


class IngestState(models.TextChoices):
    #: Accepted; waiting for a worker.
    QUEUED = "queued"
    #: A worker runs its Spark job.
    RUNNING = "running"
    #: Every record was put or found already there.
    SUCCEEDED = "succeeded"
    #: The job stopped; ``error`` says why (Spark's error when Spark failed).
    FAILED = "failed"


class IngestFormat(models.TextChoices):
    #: One JSON value a line.
    JSONL = "jsonl"
    #: A header line, then one record a line.
    CSV = "csv"
    #: One record a line.
    TEXT = "text"


class Ingest(models.Model):
    id = models.CharField(primary_key=True, max_length=32, default=ingest_id_new, editable=False)
    broker = models.CharField(max_length=48)
    queue = models.CharField(max_length=48)
    source = models.CharField(max_length=1000, help_text="A file or folder, relative to the staging directory.")
    format = models.CharField(max_length=8, choices=IngestFormat.choices, default=IngestFormat.JSONL)
    body_field = models.CharField(max_length=200, blank=True)
    key_field = models.CharField(max_length=200, blank=True)
    properties_fields = models.JSONField(default=list, blank=True)
    dedup_retention_days = models.PositiveIntegerField(
        default=7,
        validators=[MinValueValidator(1), MaxValueValidator(DEDUP_RETENTION_DAYS_MAX)],
        help_text="How long the queue remembers each record's key: a rerun within it skips every record put.",
    )
    state = models.CharField(max_length=16, choices=IngestState.choices, default=IngestState.QUEUED)
    records_total = models.BigIntegerField(null=True, blank=True, help_text="Counted before the first put.")
    records_done = models.BigIntegerField(default=0)
    messages_put = models.BigIntegerField(default=0)
    duplicates_skipped = models.BigIntegerField(default=0)
    #: Progress reported by the job's tasks: ``"<partition>:<attempt>"`` → ``[done, put]``.
    attempts = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["broker", "queue", "-created_at"], name="ingest_by_queue")]

    def __str__(self) -> str:
        return f"ingest {self.id} of {self.source} into {self.broker}/{self.queue} ({self.state})"

"""The dashboard's own rows: background jobs that move or resubmit messages, and samples
of each broker's depth for the overview's history."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class MoveAction(models.TextChoices):
    #: To a queue the operator names, as the message is (descriptor, properties, body,
    #: backout count and dead-letter reason kept).
    MOVE = "move"
    #: Back to the queue it was dead-lettered from, as a fresh delivery (backout and delivery
    #: counts 0, the dead-letter reason cleared; descriptor, properties and body kept).
    RESUBMIT = "resubmit"


class JobState(models.TextChoices):
    #: Waiting for a worker.
    QUEUED = "queued"
    #: A worker is moving its messages, batch by batch.
    RUNNING = "running"
    #: Every selected message was handled (moved, or skipped with a reason).
    SUCCEEDED = "succeeded"
    #: Stopped before the end (see ``error``); what it moved stays moved, the rest stays
    #: where it was, and it may be resumed.
    FAILED = "failed"


OPEN_JOB_STATES = (JobState.QUEUED, JobState.RUNNING)


class MoveJob(models.Model):
    """Selected messages of a dead-letter or backout queue, moved or resubmitted by a worker.
    ``position`` counts the messages handled, changed in the same database transaction as
    their moves: a worker that dies mid-batch leaves neither, and a retry goes on from it."""

    broker = models.CharField(max_length=48)
    source_queue = models.CharField(max_length=48)
    action = models.CharField(max_length=8, choices=MoveAction.choices)
    target_queue = models.CharField(
        max_length=48, blank=True, help_text="For a move; a resubmit goes back to each message's own."
    )
    msg_ids = models.JSONField(default=list, help_text="The selection, in the source queue's put order.")
    state = models.CharField(max_length=9, choices=JobState.choices, default=JobState.QUEUED)
    position = models.PositiveIntegerField(default=0, help_text="Messages handled so far (an index into msg_ids).")
    moved = models.PositiveIntegerField(default=0)
    skipped = models.PositiveIntegerField(default=0)
    problems = models.JSONField(
        default=list, blank=True, help_text="Skipped messages: msg_id, code, message (the first 100)."
    )
    error = models.CharField(max_length=500, blank=True, help_text="Why a failed job stopped.")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    username = models.CharField(max_length=150, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        indexes = [
            models.Index(fields=["broker", "source_queue", "-id"], name="movejob_queue"),
            models.Index(fields=["updated_at"], name="movejob_updated"),
        ]

    @property
    def total(self) -> int:
        return len(self.msg_ids)

    def __str__(self) -> str:
        return f"{self.action} job {self.pk} on {self.broker}/{self.source_queue}"


class DepthSample(models.Model):
    """A broker's messages by state at one moment, summed over its queues; taken every
    ``BATON_DASHBOARD_DEPTH_SAMPLE_S`` by a beat task and kept for 24 hours, so the
    overview's depth chart has history from before the page opened."""

    at = models.DateTimeField()
    broker = models.CharField(max_length=48)
    available = models.PositiveIntegerField()
    uncommitted_puts = models.PositiveIntegerField()
    in_flight = models.PositiveIntegerField()
    locked = models.PositiveIntegerField()

    class Meta:
        indexes = [models.Index(fields=["at", "broker"], name="depthsample_at")]


class ProcessKind(models.TextChoices):
    #: A web process (Uvicorn): pages, the API, the dashboard's sockets.
    WEB = "web"
    #: A Celery worker node: channel agents, move jobs, housekeeping tasks.
    WORKER = "worker"
    #: Celery beat: sends the periodic tasks (housekeeping, channel supervision, samples).
    BEAT = "beat"


class ProcessBeat(models.Model):
    """A process's last heartbeat, one row per process: a worker node writes it when it runs
    the ``dashboard.tasks.heartbeat`` task beat sends every ``BATON_DASHBOARD_HEARTBEAT_S``
    (so it says both that beat sends and that a worker takes tasks), beat when it sends a
    task, a web process while its journal follower runs. A worker node also writes it every
    interval from a thread of its own (``config/celery.py``), whoever takes the task, and
    deletes it when it stops cleanly: a worker silent for ``BATON_WORKER_LOST_S`` is lost
    (``services.worker_loss``). Rows silent for a day are deleted."""

    kind = models.CharField(max_length=8, choices=ProcessKind.choices)
    name = models.CharField(max_length=200, help_text="Worker node name, or host:pid.")
    host = models.CharField(max_length=200)
    pid = models.PositiveIntegerField()
    started_at = models.DateTimeField()
    seen_at = models.DateTimeField()
    lost_at = models.DateTimeField(
        null=True, blank=True, help_text="A worker's loss was announced then (a worker_lost event); cleared on return."
    )

    class Meta:
        constraints = [models.UniqueConstraint(fields=["kind", "name"], name="processbeat_unique")]


class QueueDepthSample(models.Model):
    """One queue's messages by state at a depth sample's moment (the same ``at`` as its
    broker's ``DepthSample``), and its put and get totals then (``/metrics``' counters:
    ``brokers.operating.traffic.traffic_totals``). Written only for queues holding any
    message or with any put or get counted: a sample of the broker without a row for the
    queue means the queue was empty and its totals 0. Kept a little over an hour, for the
    queue page's depth and rate charts (a rate is the difference of two samples' totals)."""

    at = models.DateTimeField()
    broker = models.CharField(max_length=48)
    queue = models.CharField(max_length=48)
    available = models.PositiveIntegerField()
    uncommitted_puts = models.PositiveIntegerField()
    in_flight = models.PositiveIntegerField()
    locked = models.PositiveIntegerField()
    puts = models.PositiveBigIntegerField(default=0)
    gets = models.PositiveBigIntegerField(default=0)

    class Meta:
        indexes = [
            models.Index(fields=["broker", "queue", "at"], name="queuedepth_queue_at"),
            models.Index(fields=["at"], name="queuedepth_at"),
        ]

"""Workflows: definitions (named, versioned lists of steps), their instances, each
instance's steps and history, and the requests Baton put for them (docs/api.md, "Workflows").

A definition is altered by adding a version; an instance keeps the version it started
with. An instance's and its steps' states follow the units of work of its workers exactly
(workflows.services.store, the resource manager): a step completed under a unit of work is
``in_flight`` until it commits (``committed``) or rolls back (``backed_out``); ``held`` is
shown while that unit of work's commit is held on an upstream one.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from brokers.models import Broker, name_validator


class Workflow(models.Model):
    """A named workflow of a broker; its steps are those of its current version."""

    broker = models.ForeignKey(Broker, on_delete=models.CASCADE, related_name="workflows")
    name = models.CharField(max_length=48, validators=[name_validator])
    version = models.PositiveIntegerField(default=1, help_text="The current version: new instances start with it.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["broker", "name"], name="workflow_unique_name")]


class WorkflowVersion(models.Model):
    """One version of a workflow's definition. Never changed once made."""

    workflow = models.ForeignKey(Workflow, on_delete=models.CASCADE, related_name="versions")
    version = models.PositiveIntegerField()
    description = models.CharField(max_length=200, blank=True)
    deadline_ms = models.PositiveBigIntegerField(
        default=0, help_text="An instance with no step committed for this long fails (0: no deadline)."
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["workflow", "version"], name="workflow_version_unique")]


class WorkflowStep(models.Model):
    """A step of a version: a request on ``queue``; its compensation a request on
    ``compensation_queue``. ``next`` as defined (None: the following step, if any);
    ``successors`` and ``predecessors`` as resolved at definition."""

    version = models.ForeignKey(WorkflowVersion, on_delete=models.CASCADE, related_name="steps")
    position = models.PositiveIntegerField()
    name = models.CharField(max_length=48, validators=[name_validator])
    queue = models.CharField(max_length=48)
    compensation_queue = models.CharField(max_length=48)
    next = models.JSONField(null=True, blank=True)
    successors = models.JSONField(default=list)
    predecessors = models.JSONField(default=list)

    class Meta:
        ordering = ["position"]
        constraints = [models.UniqueConstraint(fields=["version", "name"], name="workflow_step_unique")]


class InstanceState(models.TextChoices):
    #: Its steps are running (or its start is waiting for the unit of work that put it).
    RUNNING = "running"
    #: Every step committed.
    COMPLETED = "completed"
    #: It failed (a step's fail, an abort, a step request dead-lettered, its deadline):
    #: the committed steps are being compensated, newest first, one at a time.
    COMPENSATING = "compensating"
    #: Every committed step was compensated.
    COMPENSATED = "compensated"
    #: A compensation request was dead-lettered or backed out past its threshold: it waits
    #: for a person (resubmit).
    COMPENSATION_FAILED = "compensation_failed"


#: The states of an instance that has not ended.
ACTIVE_INSTANCE_STATES = (InstanceState.RUNNING, InstanceState.COMPENSATING, InstanceState.COMPENSATION_FAILED)


class StepState(models.TextChoices):
    #: Not begun: its request is not there yet, or waits on its queue.
    PENDING = "pending"
    #: Its request was got under a unit of work (or it was completed under one) that is open.
    IN_FLIGHT = "in_flight"
    #: Completed under a unit of work whose commit is held on an upstream one (shown: the
    #: stored state stays ``in_flight``).
    HELD = "held"
    #: Its unit of work committed.
    COMMITTED = "committed"
    #: Its last unit of work rolled back: its request is back on its queue.
    BACKED_OUT = "backed_out"
    #: Its compensation request is out.
    COMPENSATING = "compensating"
    #: Its compensation's unit of work committed.
    COMPENSATED = "compensated"


class Instance(models.Model):
    """One run of a workflow version."""

    id = models.CharField(primary_key=True, max_length=48)
    broker = models.ForeignKey(Broker, on_delete=models.CASCADE, related_name="+")
    workflow = models.ForeignKey(Workflow, on_delete=models.CASCADE, related_name="instances")
    version = models.ForeignKey(WorkflowVersion, on_delete=models.CASCADE, related_name="instances")
    state = models.CharField(max_length=24, choices=InstanceState.choices, default=InstanceState.RUNNING)
    reason = models.CharField(max_length=200, blank=True, help_text="Why it failed or was aborted.")
    start_transaction = models.CharField(
        max_length=32, blank=True, help_text="The unit of work that started it, until that commits."
    )
    started_at = models.DateTimeField()
    progress_at = models.DateTimeField(help_text="Its start or its latest step commit: the deadline counts from it.")
    ended_at = models.DateTimeField(null=True, blank=True)
    commits = models.PositiveIntegerField(default=0, help_text="Step commits so far (orders them).")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        indexes = [
            models.Index(fields=["workflow", "state", "started_at"], name="instance_find"),
            models.Index(fields=["state", "progress_at"], name="instance_deadline"),
            # a commit or rollback of a unit of work with workflow effects looks these up
            models.Index(fields=["start_transaction"], name="instance_start_txn"),
        ]


class InstanceStep(models.Model):
    """A step of an instance. ``transaction``: the unit of work it was completed under (its
    state follows it); ``compensation``: the compensation input recorded then (message fields)."""

    instance = models.ForeignKey(Instance, on_delete=models.CASCADE, related_name="steps")
    position = models.PositiveIntegerField()
    name = models.CharField(max_length=48)
    state = models.CharField(max_length=16, choices=StepState.choices, default=StepState.PENDING)
    transaction = models.CharField(max_length=32, blank=True)
    commit_order = models.PositiveIntegerField(null=True, blank=True)
    committed_at = models.DateTimeField(null=True, blank=True)
    compensation = models.JSONField(null=True, blank=True)
    compensation_transaction = models.CharField(max_length=32, blank=True)
    compensated_at = models.DateTimeField(null=True, blank=True)
    fail_reason = models.CharField(max_length=200, blank=True, help_text="A fail waiting for its unit of work.")
    fail_transaction = models.CharField(max_length=32, blank=True)

    class Meta:
        ordering = ["position"]
        constraints = [models.UniqueConstraint(fields=["instance", "name"], name="instance_step_unique")]
        indexes = [
            models.Index(fields=["transaction"], name="instance_step_txn"),
            models.Index(fields=["fail_transaction"], name="instance_step_fail_txn"),
            models.Index(fields=["compensation_transaction"], name="instance_step_comp_txn"),
        ]


class StepRequest(models.Model):
    """A request Baton put for an instance: a step's input, or a compensation. ``open``
    until the step commits (or the compensation does); ``put_transaction`` while the
    unit of work that put it is open."""

    instance = models.ForeignKey(Instance, on_delete=models.CASCADE, related_name="requests")
    step = models.CharField(max_length=48)
    compensation = models.BooleanField(default=False)
    msg_id = models.CharField(max_length=48, db_index=True)
    queue = models.CharField(max_length=48)
    source = models.CharField(max_length=48, blank=True, help_text="The step whose completion put it.")
    put_transaction = models.CharField(max_length=32, blank=True, db_index=True)
    open = models.BooleanField(default=True)
    put_at = models.DateTimeField()


class HistoryEvent(models.TextChoices):
    #: Started (its first request put).
    STARTED = "started"
    #: A step was completed under a unit of work (it counts once that commits).
    STEP_COMPLETED = "step_completed"
    #: A step's unit of work committed.
    STEP_COMMITTED = "step_committed"
    #: A step's unit of work rolled back.
    STEP_BACKED_OUT = "step_backed_out"
    #: A step reported failure.
    STEP_FAILED = "step_failed"
    #: A step request was dead-lettered or backed out past its threshold.
    REQUEST_DEAD_LETTERED = "request_dead_lettered"
    #: No step committed within the deadline.
    DEADLINE = "deadline"
    #: Aborted by a person or a program.
    ABORTED = "aborted"
    #: A compensation request was put.
    COMPENSATION_REQUESTED = "compensation_requested"
    #: A compensation's unit of work committed.
    STEP_COMPENSATED = "step_compensated"
    #: A compensation request was dead-lettered or backed out past its threshold.
    COMPENSATION_FAILED = "compensation_failed"
    #: A failed compensation was put again.
    COMPENSATION_RESUBMITTED = "compensation_resubmitted"
    #: Every step committed.
    COMPLETED = "completed"
    #: Every committed step was compensated.
    COMPENSATED = "compensated"


class InstanceHistory(models.Model):
    instance = models.ForeignKey(Instance, on_delete=models.CASCADE, related_name="history")
    at = models.DateTimeField()
    event = models.CharField(max_length=32, choices=HistoryEvent.choices)
    step = models.CharField(max_length=48, blank=True)
    transaction = models.CharField(max_length=32, blank=True)
    detail = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["id"]

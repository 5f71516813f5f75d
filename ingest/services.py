"""Bulk ingest: starting one, following its progress, running its Spark job on a worker.

An ingest is started by the REST API, ``manage.py ingest`` or the dashboard (all through
``ingest.api.IngestStart``'s input, then :func:`ingest_start`); a Celery worker runs it
(:func:`ingest_run`) as a Spark job in a child process (``spark_jobs.ingest``), which puts
over sessions of the platform's API with the starting user's token and reports progress
per task attempt (:func:`ingest_progress_note`).
"""

from __future__ import annotations

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from rest_framework.authtoken.models import Token

from brokers.selectors import queue_get
from config.celery import task_send
from baton_client.errors import Conflict
from spark_jobs.launch import job_run

from .models import Ingest, IngestFormat, IngestState
from .selectors import ingest_get
from .staging import staging_dir, staging_files, staging_path

#: What a Spark job's retried tasks need: without a failure count ``local`` mode never retries.
#: The Celery task that runs a recorded ingest (ingest/tasks.py).
INGEST_RUN_TASK = "ingest.tasks.ingest_run"
LOCAL_MASTER = "local[*,3]"
MS_PER_DAY = 86_400_000


def ingest_start(
    *,
    user,
    broker: str,
    queue: str,
    source: str,
    format: str = IngestFormat.JSONL,
    body_field: str = "",
    key_field: str = "",
    properties_fields: list[str] | None = None,
    dedup_retention_days: int = 7,
    on_worker: bool = True,
) -> Ingest:
    """Record an ingest (``queued``) and send it to the worker fleet once this database
    transaction commits (unless not ``on_worker``: the caller runs :func:`ingest_run`).
    The fields are valid already (the caller's boundary parsed them through
    ``IngestStart.Input``: the format, its fields, the key retention); refuses an unknown
    queue and a source outside the staging directory. ``dedup_retention_days``:
    how long the queue remembers each record's key (docs/spark.md, "Exactly once")."""
    queue_get(broker=broker, name=queue)  # 404 when there is no such queue
    staging_files(source)  # every file it would read, links resolved, inside the staging directory
    properties_fields = list(properties_fields or [])
    ingest = Ingest.objects.create(
        broker=broker,
        queue=queue,
        source=source,
        format=format,
        body_field=body_field,
        key_field=key_field,
        properties_fields=properties_fields,
        dedup_retention_days=dedup_retention_days,
        created_by=user if getattr(user, "pk", None) else None,
    )
    if on_worker:
        transaction.on_commit(lambda: _ingest_send_on_commit(ingest.pk))
    return ingest


def _ingest_send_on_commit(ingest_id: str) -> None:
    """``on_commit`` hook: send the ingest to the worker fleet (its task by name); if the
    Celery transport refuses, the ingest fails saying so (rather than the request that
    started it)."""
    try:
        task_send(INGEST_RUN_TASK, ingest_id)
    except Exception as exc:  # noqa: BLE001 - kombu's errors vary by transport
        Ingest.objects.filter(pk=ingest_id, state=IngestState.QUEUED).update(
            state=IngestState.FAILED, error=f"Could not reach the worker fleet: {exc}", finished_at=timezone.now()
        )


def ingest_progress_note(*, ingest_id: str, report: dict) -> Ingest:
    """A task's progress: ``{"records_total"}`` from the driver, or ``{"partition",
    "attempt", "done", "put"}`` (this attempt's totals so far) from a task. Puts add up over
    every attempt (a failed attempt's committed batches were put); records done count each
    partition's furthest attempt; duplicates are the rest."""
    with transaction.atomic():
        ingest = Ingest.objects.select_for_update().get(pk=ingest_get(ingest_id=ingest_id).pk)
        if ingest.state not in (IngestState.QUEUED, IngestState.RUNNING):
            raise Conflict(f"Ingest {ingest.pk} has finished.", id=ingest.pk, state=ingest.state)
        if "records_total" in report:
            ingest.records_total = int(report["records_total"])
        else:
            ingest.attempts[f"{int(report['partition'])}:{int(report['attempt'])}"] = [
                int(report["done"]),
                int(report["put"]),
            ]
        _counters_set(ingest)
        ingest.save(update_fields=["records_total", "attempts", "records_done", "messages_put", "duplicates_skipped"])
    return ingest


def _counters_set(ingest: Ingest, *, done_at_least: int = 0, put_at_least: int = 0) -> None:
    furthest: dict[str, int] = {}
    put = 0
    for key, (done, put_here) in ingest.attempts.items():
        partition = key.split(":")[0]
        furthest[partition] = max(furthest.get(partition, 0), done)
        put += put_here
    ingest.records_done = max(sum(furthest.values()), done_at_least)
    ingest.messages_put = max(put, put_at_least)
    ingest.duplicates_skipped = max(0, ingest.records_done - ingest.messages_put)


def ingest_run(*, ingest_id: str, master: str | None = None, extra_args: list[str] | None = None) -> Ingest:
    """Run a queued ingest's Spark job to the end (the worker's task). Its state says how it
    went; a failure keeps the error Spark reported."""
    with transaction.atomic():
        ingest = Ingest.objects.select_for_update().get(pk=ingest_get(ingest_id=ingest_id).pk)
        if ingest.state != IngestState.QUEUED:
            return ingest  # a second delivery of the task
        ingest.state, ingest.started_at = IngestState.RUNNING, timezone.now()
        ingest.save(update_fields=["state", "started_at"])
    try:
        source = staging_path(ingest.source)
        staging_files(ingest.source)  # refused now if a link inside has come to lead out since it started
        token = Token.objects.get_or_create(user=ingest.created_by)[0].key if ingest.created_by else ""
        args = [
            "--url",
            settings.BATON_API_URL,
            "--broker",
            ingest.broker,
            "--queue",
            ingest.queue,
            "--source",
            str(source),
            "--staging-root",
            str(staging_dir()),
            "--format",
            ingest.format,
            "--ingest-id",
            ingest.pk,
            "--master",
            master or settings.BATON_SPARK_MASTER or LOCAL_MASTER,
            "--write-partitions",
            str(settings.BATON_INGEST_WRITE_PARTITIONS),
            "--dedup-retention-ms",
            str(ingest.dedup_retention_days * MS_PER_DAY),
        ]
        for flag, value in (
            ("--body-field", ingest.body_field),
            ("--key-field", ingest.key_field),
            ("--properties-fields", ",".join(ingest.properties_fields)),
        ):
            if value:
                args += [flag, value]
        result = job_run("spark_jobs.ingest", args + list(extra_args or []), env={"BATON_API_TOKEN": token})
        ok, error, summary = result.ok, result.error, result.summary
    except Exception as exc:  # noqa: BLE001 - whatever stopped it is the ingest's error
        ok, error, summary = False, f"{type(exc).__name__}: {exc}", {}
    with transaction.atomic():
        ingest = Ingest.objects.select_for_update().get(pk=ingest.pk)
        if ok:
            if summary.get("records_total") is not None:
                ingest.records_total = summary["records_total"]
            _counters_set(
                ingest, done_at_least=summary.get("records_done", 0), put_at_least=summary.get("messages_put", 0)
            )
        ingest.state = IngestState.SUCCEEDED if ok else IngestState.FAILED
        ingest.error = "" if ok else error
        ingest.finished_at = timezone.now()
        ingest.save()
    return ingest

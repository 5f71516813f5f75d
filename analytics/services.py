"""Analytics: export the journal's new events (a watermark that never misses a late
committer: transactions.journal_export) and the workflow history (whole:
workflows.export), analyse everything exported with the Spark job
(``spark_jobs.journal_analytics``, with ``spark_jobs.workflow_analytics``), load the
results per broker."""

from __future__ import annotations

import hashlib
import json
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from config.celery import task_send
from baton_client.errors import Conflict
from spark_jobs.launch import job_run
from transactions.journal_export import journal_export_increment
from workflows.export import workflow_history_export

from .models import AnalyticsRun, BrokerAnalytics, ExportWatermark, RunState, RunTrigger
from .selectors import analytics_run_get

#: How long a run may hold the export before another may take it over (a crashed worker).
#: The Celery task that runs a recorded run (analytics/tasks.py).
ANALYTICS_RUN_TASK = "analytics.tasks.analytics_run"
LEASE = timedelta(hours=1)
RESULTS = ("brokers", "queues", "throughput", "chains", "workflow_hours", "workflow_steps", "compensations")


def analytics_run_start(*, trigger: str = RunTrigger.REQUEST) -> AnalyticsRun:
    """Record a run (``queued``) and send it to the worker fleet once this database
    transaction commits."""
    run = AnalyticsRun.objects.create(trigger=trigger)
    transaction.on_commit(lambda: _run_send_on_commit(run.pk))
    return run


def _run_send_on_commit(run_id: str) -> None:
    """``on_commit`` hook: send the run to the worker fleet (its task by name); if the Celery
    transport refuses, the run fails saying so (rather than the request that started it)."""
    try:
        task_send(ANALYTICS_RUN_TASK, run_id)
    except Exception as exc:  # noqa: BLE001 - kombu's errors vary by transport
        AnalyticsRun.objects.filter(pk=run_id, state=RunState.QUEUED).update(
            state=RunState.FAILED, error=f"Could not reach the worker fleet: {exc}", finished_at=timezone.now()
        )


def analytics_run(*, run_id: str, master: str | None = None) -> AnalyticsRun:
    """Run a queued run to the end: export, analyse, load. Its state says how it went."""
    with transaction.atomic():
        run = AnalyticsRun.objects.select_for_update().get(pk=analytics_run_get(run_id=run_id).pk)
        if run.state != RunState.QUEUED:
            return run
        run.state, run.started_at = RunState.RUNNING, timezone.now()
        run.save(update_fields=["state", "started_at"])
    error = ""
    try:
        run.events_exported = _export(run)
        run.save(update_fields=["events_exported"])
        workflows = workflow_history_export(path=Path(settings.BATON_ANALYTICS_DIR) / "workflows" / "history.jsonl")
        out = Path(settings.BATON_ANALYTICS_DIR) / "results" / run.pk
        result = job_run(
            "spark_jobs.journal_analytics",
            [
                "--input",
                str(_journal_dir()),
                "--output",
                str(out),
                "--workflows",
                workflows["path"],
                "--master",
                master or settings.BATON_SPARK_MASTER or "local[*]",
            ],
        )
        if not result.ok:
            error = result.error
        else:
            _load(run, out)
    except Conflict as exc:
        error = exc.message
    except Exception as exc:  # noqa: BLE001 - whatever stopped it is the run's error
        error = f"{type(exc).__name__}: {exc}"
    run.state = RunState.FAILED if error else RunState.SUCCEEDED
    run.error, run.finished_at = error, timezone.now()
    run.save(update_fields=["state", "error", "finished_at"])
    return run


def _journal_dir() -> Path:
    return Path(settings.BATON_ANALYTICS_DIR) / "journal"


def _export(run: AnalyticsRun) -> int:
    """Export the journal's new events as one more part file, under the export lease. The
    part is named after the watermark it starts from, so a run that crashed before saving
    the new watermark is redone by the next one over the same file."""
    now = timezone.now()
    ExportWatermark.objects.get_or_create(pk=1)
    taken = ExportWatermark.objects.filter(Q(holder="") | Q(held_until__lt=now) | Q(holder=run.pk), pk=1).update(
        holder=run.pk, held_until=now + LEASE
    )
    if not taken:
        raise Conflict("Another analytics run is exporting the journal; this one stopped.")
    try:
        watermark = ExportWatermark.objects.get(pk=1).watermark
        start = hashlib.sha256(json.dumps(watermark, sort_keys=True).encode()).hexdigest()[:16]
        summary = journal_export_increment(path=_journal_dir() / f"part-{start}.jsonl", watermark=watermark)
        if summary["events"] == 0:
            Path(summary["path"]).unlink(missing_ok=True)  # no empty parts
        ExportWatermark.objects.filter(pk=1).update(watermark=summary["watermark"])
        return summary["events"]
    finally:
        ExportWatermark.objects.filter(pk=1, holder=run.pk).update(holder="", held_until=None)


def _load(run: AnalyticsRun, out: Path) -> None:
    """The job's JSON Lines results, per broker, replacing each broker's previous ones."""
    rows = {
        name: [
            json.loads(line)
            for part in sorted((out / name).glob("part-*.json"))
            for line in part.read_text(encoding="utf-8").splitlines()
            if line.strip()
        ]
        for name in RESULTS
    }
    per_broker: dict[str, dict] = {}
    for name in RESULTS:
        for row in rows[name]:
            broker = row.pop("broker")
            entry = per_broker.setdefault(broker, {"broker": {}, **{n: [] for n in RESULTS if n != "brokers"}})
            if name == "brokers":
                entry["broker"] = row
            else:
                entry[name].append(row)
    computed_at = timezone.now()
    with transaction.atomic():
        for broker, results in per_broker.items():
            BrokerAnalytics.objects.update_or_create(
                broker=broker, defaults={"run": run, "computed_at": computed_at, "results": results}
            )

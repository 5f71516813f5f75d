"""Celery tasks of the dashboard, run by the worker fleet."""

from celery import shared_task

from .services.moves import MOVE_JOB_TASK, move_job_run


@shared_task(name=MOVE_JOB_TASK, ignore_result=True, acks_late=True, reject_on_worker_lost=True)
def move_job(job_id: int) -> str:
    """Move or resubmit a job's messages. Acknowledged at the end, so a job whose worker
    died is delivered again and goes on from its recorded position."""
    return move_job_run(job_id=job_id).state


@shared_task(name="dashboard.tasks.depth_sample", ignore_result=True)
def depth_sample() -> int:
    """Every broker's depth now, for the overview's depth history (scheduled by beat)."""
    from .services.depth import depth_sample_take

    return depth_sample_take()


@shared_task(name="dashboard.tasks.heartbeat", ignore_result=True, bind=True)
def heartbeat(self) -> str:
    """Sent by beat every ``BATON_DASHBOARD_HEARTBEAT_S``: the worker node that runs it
    records its heartbeat (the overview's process health)."""
    from .services.heartbeats import process_beat, process_beats_forget

    process_beat(kind="worker", name=self.request.hostname or None)
    process_beats_forget()
    return self.request.hostname or ""

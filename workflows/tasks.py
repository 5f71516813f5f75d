"""Celery tasks of workflows (Celery's autodiscovery imports this module)."""

from celery import shared_task

from .services.saga import workflows_sweep


@shared_task(name="workflows.tasks.sweep", ignore_result=True)
def sweep() -> dict[str, int]:
    """Deadlines, and sagas a process left between a commit and their next compensation."""
    return workflows_sweep()

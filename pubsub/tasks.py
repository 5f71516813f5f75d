"""Celery tasks of publish/subscribe: the conflation sweeper, run by beat every
``BATON_HOUSEKEEPING_INTERVAL_S`` (config/celery.py)."""

from celery import shared_task

from .services.conflation import conflation_sweep as _sweep


@shared_task(name="pubsub.tasks.conflation_sweep", ignore_result=True)
def conflation_sweep() -> dict[str, int]:
    outcome = _sweep()
    return {"delivered": outcome.delivered, "copies": outcome.copies, "failed": outcome.failed}

"""Celery tasks run by the worker fleet (Celery's autodiscovery imports this module)."""

from celery import shared_task

from .channels.tasks import channel_agent, channels_supervise  # noqa: F401 - registered with the worker
from .operating.housekeeping import operating_housekeep
from .services.housekeeping import housekeeping_run


@shared_task(name="brokers.tasks.housekeeping", ignore_result=True)
def housekeeping() -> dict[str, int]:
    return housekeeping_run()


@shared_task(name="brokers.tasks.operating_housekeep", ignore_result=True)
def operating_housekeep_task() -> dict[str, float]:
    return operating_housekeep()

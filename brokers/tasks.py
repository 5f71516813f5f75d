"""Celery tasks run by the worker fleet."""
from celery import shared_task

from .services.housekeeping import housekeeping_run


@shared_task(name="brokers.tasks.housekeeping", ignore_result=True)
def housekeeping() -> dict[str, int]:
    return housekeeping_run()

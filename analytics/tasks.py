"""Celery tasks: analytics runs on the worker fleet, on Celery beat's schedule
(``BATON_ANALYTICS_INTERVAL_S``; config/celery.py) and on request."""

from celery import shared_task

from .models import RunTrigger
from .services import ANALYTICS_RUN_TASK, analytics_run, analytics_run_start


@shared_task(name=ANALYTICS_RUN_TASK, ignore_result=True)
def analytics_run_task(run_id: str) -> str:
    return analytics_run(run_id=run_id).state


@shared_task(name="analytics.tasks.analytics_scheduled", ignore_result=True)
def analytics_scheduled() -> str:
    """Beat's tick: record a run and send it (its own task does the work)."""
    from django.db import transaction

    with transaction.atomic():
        return analytics_run_start(trigger=RunTrigger.SCHEDULE).pk

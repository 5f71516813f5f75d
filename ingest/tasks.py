"""Celery tasks: ingests run on the worker fleet."""

from celery import shared_task

from .services import INGEST_RUN_TASK, ingest_run


@shared_task(name=INGEST_RUN_TASK, ignore_result=True)
def ingest_run_task(ingest_id: str) -> str:
    return ingest_run(ingest_id=ingest_id).state

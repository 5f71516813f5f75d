"""Celery tasks: ingests run on the worker fleet."""
from celery import shared_task

from .services import ingest_run


@shared_task(name="ingest.tasks.ingest_run", ignore_result=True)
def ingest_run_task(ingest_id: str) -> str:
    return ingest_run(ingest_id=ingest_id).state

from __future__ import annotations

from django.db.models import QuerySet

from .exceptions import IngestNotFound
from .models import Ingest


def ingest_get(*, ingest_id: str) -> Ingest:
    try:
        return Ingest.objects.get(pk=ingest_id)
    except Ingest.DoesNotExist:
        raise IngestNotFound(f"No ingest {ingest_id!r}.", id=ingest_id) from None


def ingest_list(*, broker: str, queue: str, limit: int = 10) -> QuerySet[Ingest]:
    return Ingest.objects.filter(broker=broker, queue=queue).order_by("-created_at")[:limit]

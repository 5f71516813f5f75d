"""What the dashboard shows, read through the brokers' selectors."""
from __future__ import annotations

from typing import Any

from brokers.selectors import broker_list, queue_depths
from brokers.models import Queue
from transactions.models import JournalEvent


def overview() -> dict[str, Any]:
    brokers = list(broker_list())
    queues = list(Queue.objects.select_related("broker").order_by("broker__name", "name"))
    depths = queue_depths(queue_ids=[q.pk for q in queues])
    last = JournalEvent.objects.order_by("-id").values_list("id", flat=True).first()
    return {
        "journal_position": last or 0,
        "brokers": [
            {
                "name": b.name,
                "description": b.description,
                "queues": [
                    {"name": q.name, "kind": q.kind, "usage": q.usage, **depths[q.pk]}
                    for q in queues if q.broker_id == b.pk
                ],
            }
            for b in brokers
        ],
    }

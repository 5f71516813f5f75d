"""What the dashboard shows, read through the brokers' selectors."""
from __future__ import annotations

from typing import Any

from brokers.selectors import broker_list, queue_depths
from brokers.models import Channel, Queue
from transactions.models import JournalEvent


def overview() -> dict[str, Any]:
    brokers = list(broker_list())
    queues = list(Queue.objects.select_related("broker").order_by("broker__name", "name"))
    depths = queue_depths(queue_ids=[q.pk for q in queues])
    last = JournalEvent.objects.order_by("-id").values_list("id", flat=True).first()
    channels = [
        {"name": c.name, "source_broker": c.source_broker.name, "target_broker": c.target_broker,
         "remote": bool(c.target_url), "state": c.state, "preemptive": c.preemptive,
         "batches_committed": c.batches_committed, "batches_backed_out": c.batches_backed_out,
         "messages_sent": c.messages_sent, "last_error": c.last_error or None}
        for c in Channel.objects.select_related("source_broker").order_by("name")
    ]
    return {
        "journal_position": last or 0,
        "channels": channels,
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

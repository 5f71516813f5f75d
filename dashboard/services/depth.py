"""Depth samples for the overview's history (the journal records events, not depths)."""

from __future__ import annotations

from datetime import timedelta

from django.db import transaction as db
from django.utils import timezone

from brokers.models import Queue

from ..models import DepthSample, QueueDepthSample
from ..selectors import DEPTH_PARTS, queue_counts

KEEP = timedelta(hours=24)
#: Per-queue samples are kept this long (the queue page's chart).
QUEUE_KEEP = timedelta(hours=1)


def depth_sample_take() -> int:
    """Record every broker's messages by state now (summed over its queues), and each queue's
    that holds any message, and forget the broker samples older than 24 hours and the queue
    samples older than one hour. Returns how many brokers were sampled."""
    now = timezone.now()
    queues = list(Queue.objects.values_list("pk", "broker__name", "name"))
    counts = queue_counts(queue_ids=[pk for pk, _, _ in queues])
    totals: dict[str, dict[str, int]] = {}
    held = []
    for pk, broker, name in queues:
        total = totals.setdefault(broker, dict.fromkeys(DEPTH_PARTS, 0))
        for part in DEPTH_PARTS:
            total[part] += counts[pk][part]
        if any(counts[pk][part] for part in DEPTH_PARTS):
            held.append(QueueDepthSample(at=now, broker=broker, queue=name, **{p: counts[pk][p] for p in DEPTH_PARTS}))
    with db.atomic():
        DepthSample.objects.bulk_create([DepthSample(at=now, broker=b, **t) for b, t in totals.items()])
        QueueDepthSample.objects.bulk_create(held, batch_size=500)
        DepthSample.objects.filter(at__lt=now - KEEP).delete()
        QueueDepthSample.objects.filter(at__lt=now - QUEUE_KEEP).delete()
    return len(totals)

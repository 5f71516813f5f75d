"""Depth samples for the overview's history (the journal records events, not depths)."""

from __future__ import annotations

from datetime import timedelta

from django.db import transaction as db
from django.utils import timezone

from brokers.models import Queue

from ..models import DepthSample
from ..selectors import DEPTH_PARTS, queue_counts

KEEP = timedelta(hours=24)


def depth_sample_take() -> int:
    """Record every broker's messages by state now (summed over its queues) and forget the
    samples older than 24 hours. Returns how many brokers were sampled."""
    now = timezone.now()
    queues = list(Queue.objects.values_list("pk", "broker__name"))
    counts = queue_counts(queue_ids=[pk for pk, _ in queues])
    totals: dict[str, dict[str, int]] = {}
    for pk, broker in queues:
        total = totals.setdefault(broker, dict.fromkeys(DEPTH_PARTS, 0))
        for part in DEPTH_PARTS:
            total[part] += counts[pk][part]
    with db.atomic():
        DepthSample.objects.bulk_create([DepthSample(at=now, broker=b, **t) for b, t in totals.items()])
        DepthSample.objects.filter(at__lt=now - KEEP).delete()
    return len(totals)

"""Depth samples for the overview's history (the journal records events, not depths)."""

from __future__ import annotations

from datetime import timedelta

from django.db import transaction as db
from django.utils import timezone

from brokers.models import Queue
from brokers.operating.traffic import traffic_totals

from ..models import DepthSample, QueueDepthSample
from ..selectors import DEPTH_PARTS, queue_counts

KEEP = timedelta(hours=24)
#: Per-queue samples are kept this long: the queue page's longest window (an hour) and the
#: sample before it (its rates are differences of two samples' totals).
QUEUE_KEEP = timedelta(minutes=65)


def depth_sample_take() -> int:
    """Record every broker's messages by state now (summed over its queues), and each queue's
    that holds any message or has any put or get counted, with its put and get totals
    (``/metrics``' counters), and forget the broker samples older than 24 hours and the queue
    samples older than ``QUEUE_KEEP``. Returns how many brokers were sampled."""
    now = timezone.now()
    queues = list(Queue.objects.values_list("pk", "broker__name", "name"))
    counts = queue_counts(queue_ids=[pk for pk, _, _ in queues])
    traffic = traffic_totals()
    totals: dict[str, dict[str, int]] = {}
    held = []
    for pk, broker, name in queues:
        total = totals.setdefault(broker, dict.fromkeys(DEPTH_PARTS, 0))
        for part in DEPTH_PARTS:
            total[part] += counts[pk][part]
        moved = traffic.get((broker, name), {})
        if any(counts[pk][part] for part in DEPTH_PARTS) or any(moved.values()):
            parts = {p: counts[pk][p] for p in DEPTH_PARTS}
            held.append(QueueDepthSample(at=now, broker=broker, queue=name, **parts, **moved))
    with db.atomic():
        DepthSample.objects.bulk_create([DepthSample(at=now, broker=b, **t) for b, t in totals.items()])
        QueueDepthSample.objects.bulk_create(held, batch_size=500)
        DepthSample.objects.filter(at__lt=now - KEEP).delete()
        QueueDepthSample.objects.filter(at__lt=now - QUEUE_KEEP).delete()
    return len(totals)

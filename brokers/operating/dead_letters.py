"""Dead-lettering bursts as events (docs/operating.md, "Dead-lettering bursts").

Each operating pass counts, from the journal's events since the last pass (ids after
``DeadLetterWatch.last_id``, one aggregate query), the messages that reached each broker's
dead-letter queue: dead-lettered there (``dead_letter`` events whose target, or queue when
they name no target, is the dead-letter queue), delivered there by a channel (``transfer``)
or put there (``put``). A broker with more than ``BATON_DEAD_LETTER_BURST`` of them gets one
``dead_letter_burst`` event on its ``SYSTEM.ADMIN.PERFM.EVENT`` queue. Off the put and get
path; the watch row is locked for the pass, so each journal event is counted once however
many workers run the housekeeping.

The first pass only notes where the journal stands, and so does a pass more than three
intervals after the last one (the housekeeping was stopped: what piled up meanwhile is not
one interval's burst). On PostgreSQL a dead-lettering whose database transaction commits
after a pass has read the journal, with an id drawn before that pass's newest, is not
counted (journal rows are written in short transactions).
"""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

from django.conf import settings
from django.db import transaction as db
from django.db.models import Max, Sum
from django.db.models.fields.json import KT
from django.utils import timezone

from transactions.models import JournalEvent, JournalKind

from ..models import Broker, DeadLetterWatch
from .events import EVENT_QUEUE, event_put

ARRIVALS = [JournalKind.DEAD_LETTER, JournalKind.TRANSFER, JournalKind.PUT]


def dead_letter_arrivals(*, after_id: int, upto_id: int) -> Counter:
    """Messages that reached each broker's dead-letter queue in the journal's events with
    ids in (``after_id``, ``upto_id``], by broker name."""
    queues = dict(Broker.objects.values_list("name", "dead_letter_queue"))
    rows = (
        JournalEvent.objects.filter(id__gt=after_id, id__lte=upto_id, kind__in=ARRIVALS)
        .values("broker", "queue", "kind", target=KT("detail__target"))
        .annotate(n=Sum("count"))
        .order_by()
    )
    arrived: Counter = Counter()
    for row in rows:
        where = row["target"] if row["kind"] == JournalKind.DEAD_LETTER and row["target"] else row["queue"]
        if where and where == queues.get(row["broker"]):
            arrived[row["broker"]] += row["n"] or 0
    return arrived


def dead_letter_bursts_evaluate(*, now=None) -> int:
    """Count the arrivals on the dead-letter queues since the last pass; one event per broker
    over ``BATON_DEAD_LETTER_BURST``. Returns how many event messages were put."""
    threshold = settings.BATON_DEAD_LETTER_BURST
    if threshold <= 0:
        return 0
    now = now or timezone.now()
    put = 0
    with db.atomic():
        DeadLetterWatch.objects.get_or_create(pk=1)
        watch = DeadLetterWatch.objects.select_for_update().get(pk=1)
        if watch.evaluated_at is not None and watch.evaluated_at >= now:
            return 0  # a later pass (overlapping this one) has counted already
        upto = JournalEvent.objects.aggregate(hi=Max("id"))["hi"] or watch.last_id
        stale = timedelta(seconds=3 * settings.BATON_OPERATING_INTERVAL_S)
        if watch.evaluated_at is not None and now - watch.evaluated_at <= stale and upto > watch.last_id:
            for broker, n in sorted(dead_letter_arrivals(after_id=watch.last_id, upto_id=upto).items()):
                if n > threshold:
                    body = {
                        "event": "dead_letter_burst",
                        "broker": broker,
                        "queue": Broker.objects.values_list("dead_letter_queue", flat=True).get(name=broker),
                        "dead_lettered": n,
                        "dead_letter_burst": threshold,
                        "since": watch.evaluated_at.isoformat(),
                        "at": now.isoformat(),
                    }
                    put += event_put(broker, EVENT_QUEUE, body, {"event": body["event"], "queue": body["queue"]})
        watch.last_id, watch.evaluated_at = max(upto, watch.last_id), now
        watch.save()
    return put

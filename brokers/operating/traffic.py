"""Put and get totals per queue (``TrafficTotal``), folded from the journal by housekeeping.

``/metrics`` reports ``baton_messages_put_total`` and ``baton_messages_got_total`` as the
folded totals plus the put and get events after the fold's ``last_id`` (a short tail), so a
scrape never reads the whole journal, and the totals outlive the events retention removes
(retention removes only folded events: ``brokers.operating.retention``).

Only events older than ``FOLD_MARGIN_S`` are folded: on PostgreSQL ids come from a sequence
and a writer's row can become visible after a later id has (its database transaction still
open). Journal rows are written in short database transactions, far shorter than the
margin, so every event at or below a folded id is final when it is folded. On SQLite ids are
drawn under the write lock, in commit order, and the margin changes nothing.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import timedelta

from django.db import transaction as db
from django.db.models import Sum
from django.utils import timezone

from transactions.models import JournalEvent, JournalKind
from transactions.selectors import journal_first_id_since

from ..models import TrafficFold, TrafficTotal

FOLD_MARGIN_S = 15
#: Journal ids folded per database transaction at most (a first fold of a long journal is
#: done in steps, each a short hold of the write lock).
FOLD_BATCH_IDS = 20_000
KINDS = {JournalKind.PUT: "puts", JournalKind.GET: "gets"}


def traffic_counts(*, after_id: int, upto_id: int | None = None) -> dict[tuple[str, str], dict[str, int]]:
    """Messages put and gotten per (broker, queue) in the journal's events with ids in
    (``after_id``, ``upto_id``]: one aggregate query."""
    events = JournalEvent.objects.filter(id__gt=after_id, kind__in=list(KINDS))
    if upto_id is not None:
        events = events.filter(id__lte=upto_id)
    counts: dict[tuple[str, str], dict[str, int]] = defaultdict(lambda: {"puts": 0, "gets": 0})
    for row in events.values("broker", "queue", "kind").annotate(n=Sum("count")).order_by():
        counts[(row["broker"], row["queue"])][KINDS[row["kind"]]] += row["n"] or 0
    return counts


def traffic_totals(*, brokers: frozenset[str] | None = None) -> dict[tuple[str, str], dict[str, int]]:
    """Messages put and gotten per (broker, queue) since the queue's name was first used:
    the folded totals plus the journal's events after the fold (what ``/metrics`` reports
    as ``baton_messages_put_total`` and ``baton_messages_got_total``, and what the queue
    page's rates are sampled from). ``brokers``: only these (None: every broker)."""
    rows = TrafficTotal.objects.all()
    if brokers is not None:
        rows = rows.filter(broker__in=brokers)
    totals: dict[tuple[str, str], dict[str, int]] = {
        (broker, queue): {"puts": puts, "gets": gets}
        for broker, queue, puts, gets in rows.values_list("broker", "queue", "puts", "gets")
    }
    for key, added in traffic_counts(after_id=traffic_folded_id()).items():
        if brokers is None or key[0] in brokers:
            total = totals.setdefault(key, {"puts": 0, "gets": 0})
            total["puts"] += added["puts"]
            total["gets"] += added["gets"]
    return totals


def traffic_fold_step() -> int:
    """Fold up to ``FOLD_BATCH_IDS`` journal ids older than the margin into the totals, in
    one database transaction; returns how many ids were folded (0: caught up)."""
    first_recent = journal_first_id_since(since=timezone.now() - timedelta(seconds=FOLD_MARGIN_S))
    if first_recent is None:
        return 0
    with db.atomic():
        fold, _ = TrafficFold.objects.select_for_update().get_or_create(pk=1)
        upto = min(first_recent - 1, fold.last_id + FOLD_BATCH_IDS)
        if upto <= fold.last_id:
            return 0
        counts = traffic_counts(after_id=fold.last_id, upto_id=upto)
        if counts:
            existing = {
                (t.broker, t.queue): t
                for t in TrafficTotal.objects.filter(
                    broker__in={b for b, _ in counts}, queue__in={q for _, q in counts}
                )
            }
            rows = []
            for (broker, queue), added in counts.items():
                old = existing.get((broker, queue))
                rows.append(
                    TrafficTotal(
                        broker=broker,
                        queue=queue,
                        puts=(old.puts if old else 0) + added["puts"],
                        gets=(old.gets if old else 0) + added["gets"],
                    )
                )
            TrafficTotal.objects.bulk_create(
                rows, update_conflicts=True, unique_fields=["broker", "queue"], update_fields=["puts", "gets"]
            )
        folded = upto - fold.last_id
        fold.last_id = upto
        fold.save(update_fields=["last_id"])
    return folded


def traffic_fold() -> int:
    """Fold every journal id older than the margin, step by step; returns how many."""
    total = 0
    while (n := traffic_fold_step()) > 0:
        total += n
    return total


def traffic_folded_id() -> int:
    """The last journal id folded into the totals (0: none)."""
    return TrafficFold.objects.filter(pk=1).values_list("last_id", flat=True).first() or 0

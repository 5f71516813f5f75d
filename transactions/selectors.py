"""Reads on units of work and their links."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db.models import Max, Min

from .exceptions import TransactionNotFound
from .models import JournalEvent, Link, Transaction


def transaction_get(*, transaction_id: str) -> Transaction:
    try:
        return Transaction.objects.get(pk=transaction_id)
    except (Transaction.DoesNotExist, ValueError) as exc:
        raise TransactionNotFound(f"No transaction {transaction_id}.", transaction=transaction_id) from exc


def transaction_neighbours(*, transaction_id: str) -> tuple[list[str], list[str]]:
    """The transaction's upstream and downstream transaction ids."""
    upstream = sorted(set(Link.objects.filter(downstream_id=transaction_id).values_list("upstream_id", flat=True)))
    downstream = sorted(set(Link.objects.filter(upstream_id=transaction_id).values_list("downstream_id", flat=True)))
    return upstream, downstream


def transaction_graph(*, broker: str, recent: int = 200) -> dict:
    """A broker's live transaction graph for the dashboard: its open transactions, the most
    recently resolved ones (up to ``recent``), every transaction linked to those (on any
    broker), and the links between them. Nodes: id, broker, state, reason; edges:
    upstream, downstream, resource."""
    from .models import OPEN_STATES

    open_ids = set(Transaction.objects.filter(broker=broker, state__in=OPEN_STATES).values_list("id", flat=True))
    recent_ids = set(
        Transaction.objects.filter(broker=broker, resolved_at__isnull=False)
        .order_by("-resolved_at")
        .values_list("id", flat=True)[:recent]
    )
    core = open_ids | recent_ids
    links = list(
        Link.objects.filter(upstream_id__in=core).values_list("upstream_id", "downstream_id", "resource_ref")
    ) + list(Link.objects.filter(downstream_id__in=core).values_list("upstream_id", "downstream_id", "resource_ref"))
    links = sorted(set(links))
    ids = core | {u for u, _, _ in links} | {d for _, d, _ in links}
    nodes = [
        {
            "id": t.id,
            "broker": t.broker,
            "state": t.state,
            "reason": t.reason or None,
            "created_at": t.created_at.isoformat(),
            "resolved_at": t.resolved_at.isoformat() if t.resolved_at else None,
        }
        for t in Transaction.objects.filter(pk__in=ids).order_by("created_at")
    ]
    edges = [{"upstream": u, "downstream": d, "resource": r} for u, d, r in links]
    return {"broker": broker, "nodes": nodes, "edges": edges}


#: How far ``at`` may run behind id order: an event's time is taken when its database
#: transaction begins and its id when it is written, a step apart (milliseconds).
JOURNAL_AT_SLACK = timedelta(seconds=60)


def journal_first_id_since(*, since: datetime) -> int | None:
    """The id from which the journal's events at or after ``since`` are found (each still to
    be filtered by ``at``), or None if the journal is empty: a binary search over ids, each
    probe a look-up by primary key, since ``at`` has no index of its own. Ids grow with
    ``at`` up to ``JOURNAL_AT_SLACK``, which the search leaves in."""
    bound = since - JOURNAL_AT_SLACK
    ids = JournalEvent.objects.aggregate(lo=Min("id"), hi=Max("id"))
    if ids["hi"] is None:
        return None
    lo, hi = ids["lo"], ids["hi"] + 1  # the answer is in [lo, hi]; hi: no event that late
    while lo < hi:
        mid = (lo + hi) // 2
        found = JournalEvent.objects.filter(id__gte=mid).order_by("id").values_list("id", "at").first()
        if found is None or found[1] >= bound:
            hi = mid
        else:
            lo = found[0] + 1
    return lo

"""The platform's figures for ``/metrics``, read from the database (so every web process
reports the same): a few aggregate queries whatever the number of queues, never one per
queue (``bench/metrics_scrape.py`` times a scrape)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from django.db.models import Count, Min, Q
from django.utils import timezone

from dashboard.models import ProcessBeat
from stomp_server.models import StompClient
from transactions.models import OPEN_STATES, Transaction, TransactionState
from workflows.models import Instance

from ..models import (
    Broker,
    Channel,
    ChannelState,
    Connection,
    Message,
    Queue,
)
from .traffic import traffic_totals


@dataclass
class QueueFigures:
    broker: str
    queue: str
    #: the depth at which the queue's depth is high (its depth_high_pct of max_depth, as the
    #: queue events count it); None: no threshold
    depth_high: int | None
    depth: int = 0
    uncommitted_puts: int = 0
    oldest_age_s: float = 0.0
    puts: int = 0
    gets: int = 0


@dataclass
class PlatformFigures:
    queues: list[QueueFigures]
    #: (broker, state) -> open units of work
    units_of_work: dict[tuple[str, str], int]
    #: (channel, up, messages sent)
    channels: list[tuple[str, bool, int]]
    #: (broker, workflow, state) -> instances
    workflow_instances: dict[tuple[str, str, str], int]
    stomp_connections: int
    sessions: int
    brokers: list[str] = field(default_factory=list)
    #: (kind, name, seconds since its last heartbeat) of each platform process (web, worker,
    #: beat); None in the figures of some brokers only (the processes are the platform's)
    processes: list[tuple[str, str, float]] | None = None


def platform_figures(*, brokers: frozenset[str] | None) -> PlatformFigures:
    """Every figure ``/metrics`` shows, for ``brokers`` (None: all of them)."""
    now = timezone.now()

    def only(query, path: str):
        return query if brokers is None else query.filter(**{f"{path}__in": brokers})

    queues = {
        pk: QueueFigures(broker=b, queue=q, depth_high=math.ceil(m * pct / 100) if pct else None)
        for pk, b, q, m, pct in only(Queue.objects, "broker__name").values_list(
            "pk", "broker__name", "name", "max_depth", "depth_high_pct"
        )
    }
    # the put's unit of work joined once (not looked up per message and condition: no lock here)
    committed = Q(put_transaction__isnull=True) | Q(put_transaction__state=TransactionState.COMMITTED)
    depths = (
        only(Message.objects, "queue__broker__name")
        .values("queue_id")
        .annotate(
            depth=Count("id", filter=committed),
            uncommitted=Count("id", filter=Q(put_transaction__state__in=OPEN_STATES)),
            oldest=Min("put_time", filter=committed),
        )
        .order_by()
        .values_list("queue_id", "depth", "uncommitted", "oldest")
    )
    for queue_id, depth, uncommitted, oldest in depths:
        figures = queues.get(queue_id)
        if figures is None:  # a queue defined since the first read
            continue
        figures.depth, figures.uncommitted_puts = depth, uncommitted
        if oldest is not None:
            figures.oldest_age_s = max(0.0, (now - oldest).total_seconds())

    # totals folded from the journal, plus its events since the fold
    by_name = {(f.broker, f.queue): f for f in queues.values()}
    for key, total in traffic_totals(brokers=brokers).items():
        if (figures := by_name.get(key)) is not None:
            figures.puts, figures.gets = total["puts"], total["gets"]

    broker_names = sorted(only(Broker.objects, "name").values_list("name", flat=True))
    units = {(b, s): 0 for b in broker_names for s in OPEN_STATES}
    for row in (
        only(Transaction.objects.filter(state__in=OPEN_STATES), "broker")
        .values("broker", "state")
        .annotate(n=Count("id"))
        .order_by()
    ):
        units[(row["broker"], row["state"])] = row["n"]

    channels = [
        (name, state == ChannelState.RUNNING, sent)
        for name, state, sent in only(Channel.objects, "source_broker__name")
        .order_by("name")
        .values_list("name", "state", "messages_sent")
    ]
    instances = {
        (row["broker__name"], row["workflow__name"], row["state"]): row["n"]
        for row in only(Instance.objects, "broker__name")
        .values("broker__name", "workflow__name", "state")
        .annotate(n=Count("id"))
        .order_by()
    }
    return PlatformFigures(
        queues=sorted(queues.values(), key=lambda f: (f.broker, f.queue)),
        units_of_work=units,
        channels=channels,
        workflow_instances=instances,
        stomp_connections=only(StompClient.objects, "broker").count(),
        sessions=only(Connection.objects.filter(closed_at__isnull=True), "broker__name").count(),
        brokers=broker_names,
        processes=None
        if brokers is not None
        else [
            (kind, name, max(0.0, (now - seen).total_seconds()))
            for kind, name, seen in ProcessBeat.objects.order_by("kind", "name").values_list("kind", "name", "seen_at")
        ],
    )

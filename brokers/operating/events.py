"""Queue performance events, as IBM MQ's (docs/operating.md,
"Queue events").

A queue with ``depth_high_pct``, ``depth_low_pct`` or ``service_interval_ms`` set (0: off) is
evaluated by the operating housekeeping, every ``BATON_OPERATING_INTERVAL_S`` seconds (5 by
default), off the put and get path: its depth and the age of its oldest committed message,
read in one aggregate query for all such queues, are compared with where it stood at the last
evaluation (``QueueEventState``). Each crossing puts one event message on the broker's
``SYSTEM.ADMIN.PERFM.EVENT`` queue (defined on first use), in the same database transaction
as the new state, under the state row's lock: once per crossing, however many workers run
the housekeeping.

- ``queue_depth_high``: the depth reached ``depth_high_pct`` of ``max_depth`` (from below;
  also at the first evaluation of a queue already over it).
- ``queue_depth_low``: the depth fell to ``depth_low_pct`` of ``max_depth`` from above.
- ``queue_service_interval_high``: the oldest committed message is older than
  ``service_interval_ms`` (nobody has served the queue for that long);
  ``queue_service_interval_ok``: it is not any more, after a high event.

An event that cannot be put (the event queue full or put-inhibited) is lost, as IBM MQ's
are, and logged. A crossing shorter than the interval may go unseen; the figures in the event are those of
the evaluation. The body is JSON: ``event``, ``broker``, ``queue``, ``depth``, ``max_depth``,
the threshold crossed, ``oldest_message_age_ms`` and ``at``; the properties carry ``event``
and ``queue`` for selective gets.
"""

from __future__ import annotations

import json
import logging
import math

from django.db import transaction as db
from django.db.models import Count, Min, Q
from django.utils import timezone

from ..exceptions import AlreadyExists, PutInhibited, QueueFull, QueueNotFound
from ..models import Message, Queue, QueueEventState, put_committed_q
from ..services.message_input import MessageInput
from ..services.messages.put import message_put
from ..services.queues import queue_define
from ..selectors import queue_get

log = logging.getLogger(__name__)
EVENT_QUEUE = "SYSTEM.ADMIN.PERFM.EVENT"


def _event_queue_ready(broker: str) -> None:
    try:
        queue_get(broker=broker, name=EVENT_QUEUE)
    except QueueNotFound:
        try:
            queue_define(broker=broker, name=EVENT_QUEUE, description="Queue performance events (docs/operating.md).")
        except AlreadyExists:
            pass


def _crossings(queue: Queue, state: QueueEventState, depth: int, age_ms: int) -> list[tuple[str, dict]]:
    """The events of this evaluation, and ``state`` moved to where the queue stands now."""
    events: list[tuple[str, dict]] = []
    if queue.depth_high_pct:
        high = depth >= math.ceil(queue.max_depth * queue.depth_high_pct / 100)
        if high and not state.depth_high:
            events.append(("queue_depth_high", {"depth_high_pct": queue.depth_high_pct}))
        state.depth_high = high
    else:
        state.depth_high = None
    if queue.depth_low_pct:
        low = depth <= math.floor(queue.max_depth * queue.depth_low_pct / 100)
        if low and state.depth_low is False:
            events.append(("queue_depth_low", {"depth_low_pct": queue.depth_low_pct}))
        state.depth_low = low
    else:
        state.depth_low = None
    if queue.service_interval_ms:
        late = age_ms > queue.service_interval_ms
        if late and not state.service_high:
            events.append(("queue_service_interval_high", {"service_interval_ms": queue.service_interval_ms}))
        elif not late and state.service_high:
            events.append(("queue_service_interval_ok", {"service_interval_ms": queue.service_interval_ms}))
        state.service_high = late
    else:
        state.service_high = None
    return events


def queue_events_evaluate(*, now=None) -> int:
    """Evaluate every queue with a threshold set; returns how many event messages were put."""
    now = now or timezone.now()
    watched = Q(depth_high_pct__gt=0) | Q(depth_low_pct__gt=0) | Q(service_interval_ms__gt=0)
    queues = list(Queue.objects.filter(watched).exclude(name=EVENT_QUEUE).select_related("broker"))
    if not queues:
        return 0
    figures = {
        row["queue_id"]: row
        for row in Message.objects.filter(queue_id__in=[q.pk for q in queues])
        .values("queue_id")
        .annotate(depth=Count("id", filter=put_committed_q()), oldest=Min("put_time", filter=put_committed_q()))
        .order_by()
    }
    put = 0
    for queue in queues:
        row = figures.get(queue.pk) or {"depth": 0, "oldest": None}
        depth = row["depth"]
        age_ms = int((now - row["oldest"]).total_seconds() * 1000) if row["oldest"] else 0
        with db.atomic():
            QueueEventState.objects.get_or_create(queue=queue)
            state = QueueEventState.objects.select_for_update().get(queue=queue)
            events = _crossings(queue, state, depth, age_ms)
            if events:
                _event_queue_ready(queue.broker.name)
            for name, threshold in events:
                body = {
                    "event": name,
                    "broker": queue.broker.name,
                    "queue": queue.name,
                    "depth": depth,
                    "max_depth": queue.max_depth,
                    **threshold,
                    "oldest_message_age_ms": age_ms,
                    "at": now.isoformat(),
                }
                message = MessageInput(
                    body=json.dumps(body).encode(),
                    format="json",
                    persistence="persistent",
                    properties={"event": name, "queue": queue.name},
                )
                try:
                    message_put(broker=queue.broker.name, queue=EVENT_QUEUE, messages=[message])
                except (QueueFull, PutInhibited) as exc:  # as IBM MQ: the event is lost, the state moves on
                    log.warning("%s of %s/%s not put on %s: %s", name, queue.broker.name, queue.name, EVENT_QUEUE, exc)
                    continue
                put += 1
            state.depth, state.evaluated_at = depth, now
            state.save()
    return put


def queue_events_open(*, brokers: frozenset[str] | None = None) -> list[QueueEventState]:
    """The queues whose depth is high or whose service interval is exceeded now (as of the
    last evaluation): what a console shows as alerts."""
    states = QueueEventState.objects.filter(Q(depth_high=True) | Q(service_high=True)).select_related("queue__broker")
    if brokers is not None:
        states = states.filter(queue__broker__name__in=brokers)
    return list(states.order_by("queue__broker__name", "queue__name"))

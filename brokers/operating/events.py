"""Queue performance events, as IBM MQ's (docs/operating.md,
"Queue events").

A queue with ``depth_high_pct``, ``depth_low_pct`` or ``service_interval_ms`` set (0: off) is
evaluated by the operating housekeeping, every ``BATON_OPERATING_INTERVAL_S`` seconds (5 by
default), off the put and get path: its depth and the age of its oldest committed message,
read in one aggregate query for all such queues, are compared with where it stood at the last
evaluation (``QueueEventState``). A pass where nothing crossed only reads. Each crossing puts
one event message on the broker's ``SYSTEM.ADMIN.PERFM.EVENT`` queue (defined on first use),
in the same database transaction as the new state, under the state row's lock: once per
crossing, however many workers run the housekeeping (a pass that overlaps a later one leaves
the rows the later one has evaluated).

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

Channels likewise (``ChannelEventState``): each change of a channel's state puts
``channel_running``, ``channel_retrying``, ``channel_stopped`` or ``channel_in_doubt`` on its
source broker's ``SYSTEM.ADMIN.CHANNEL.EVENT`` (the channel, the previous state, the retry
count and the last error).
"""

from __future__ import annotations

import json
import logging
import math

from django.db import transaction as db
from django.db.models import Count, Min, Q
from django.utils import timezone

from baton_client.errors import AlreadyExists, PutInhibited, QueueFull
from ..exceptions import QueueNotFound
from ..models import Channel, ChannelEventState, Message, Queue, QueueEventState, put_committed_q
from ..services.message_input import MessageInput
from ..services.messages.put import message_put
from ..services.queues import queue_define
from ..selectors import queue_get

log = logging.getLogger(__name__)
EVENT_QUEUE = "SYSTEM.ADMIN.PERFM.EVENT"
CHANNEL_EVENT_QUEUE = "SYSTEM.ADMIN.CHANNEL.EVENT"


def _event_queue_ready(broker: str, name: str) -> None:
    try:
        queue_get(broker=broker, name=name)
    except QueueNotFound:
        try:
            queue_define(broker=broker, name=name, description="Performance and channel events (docs/operating.md).")
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
    known = {state.queue_id: state for state in QueueEventState.objects.filter(queue_id__in=[q.pk for q in queues])}
    put = 0
    for queue in queues:
        row = figures.get(queue.pk) or {"depth": 0, "oldest": None}
        depth = row["depth"]
        age_ms = int((now - row["oldest"]).total_seconds() * 1000) if row["oldest"] else 0
        before = known.get(queue.pk) or QueueEventState(queue=queue)
        seen = (before.depth_high, before.depth_low, before.service_high)
        _crossings(queue, before, depth, age_ms)
        if queue.pk in known and (before.depth_high, before.depth_low, before.service_high) == seen:
            continue  # nothing crossed: no write (a steady pass only reads)
        with db.atomic():  # the state row locked, evaluated again: once per crossing
            QueueEventState.objects.get_or_create(queue=queue)
            state = QueueEventState.objects.select_for_update().get(queue=queue)
            if state.evaluated_at is not None and state.evaluated_at >= now:
                continue  # a later pass (overlapping this one) has evaluated it already
            events = _crossings(queue, state, depth, age_ms)
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
                put += event_put(queue.broker.name, EVENT_QUEUE, body, {"event": name, "queue": queue.name})
            state.depth, state.evaluated_at = depth, now
            state.save()
    return put


def event_put(broker: str, queue: str, body: dict, properties: dict) -> int:
    """Put one event message (the event queue defined on first use); 1, or 0 when it cannot
    be put (as IBM MQ's: the event is lost, the state moves on)."""
    _event_queue_ready(broker, queue)
    message = MessageInput(
        body=json.dumps(body).encode(), format="json", persistence="persistent", properties=properties
    )
    try:
        message_put(broker=broker, queue=queue, messages=[message])
    except (QueueFull, PutInhibited) as exc:
        log.warning("%s event not put on %s of %s: %s", body["event"], queue, broker, exc)
        return 0
    return 1


def channel_events_evaluate(*, now=None) -> int:
    """Put one event on the source broker's ``SYSTEM.ADMIN.CHANNEL.EVENT`` for each channel
    whose state changed since the last evaluation (``channel_running``, ``channel_retrying``,
    ``channel_stopped``, ``channel_in_doubt``); a channel seen the first time is only noted.
    Returns how many were put."""
    now = now or timezone.now()
    known = dict(ChannelEventState.objects.values_list("channel_id", "state"))
    put = 0
    for channel in Channel.objects.select_related("source_broker"):
        if known.get(channel.pk) == channel.state:
            continue
        with db.atomic():
            state, created = ChannelEventState.objects.get_or_create(channel=channel, defaults={"state": channel.state})
            state = ChannelEventState.objects.select_for_update().get(pk=state.pk)
            if not created and state.evaluated_at is not None and state.evaluated_at >= now:
                continue  # a later pass (overlapping this one) has evaluated it already
            channel.refresh_from_db(fields=["state", "retry_count", "last_error"])  # as it is now, under the lock
            if not created and state.state != channel.state:
                body = {
                    "event": f"channel_{channel.state}",
                    "channel": channel.name,
                    "broker": channel.source_broker.name,
                    "target_broker": channel.target_broker,
                    "previous_state": state.state,
                    "state": channel.state,
                    "retry_count": channel.retry_count,
                    "last_error": channel.last_error[:500],
                    "at": now.isoformat(),
                }
                properties = {"event": body["event"], "channel": channel.name}
                put += event_put(channel.source_broker.name, CHANNEL_EVENT_QUEUE, body, properties)
            state.state, state.evaluated_at = channel.state, now
            state.save()
    return put


def queue_events_open(*, brokers: frozenset[str] | None = None) -> list[QueueEventState]:
    """The queues whose depth is high or whose service interval is exceeded now (as of the
    last evaluation, of the thresholds still set): what a console shows as alerts."""
    still_high = Q(depth_high=True, queue__depth_high_pct__gt=0)
    still_late = Q(service_high=True, queue__service_interval_ms__gt=0)
    states = QueueEventState.objects.filter(still_high | still_late).select_related("queue__broker")
    if brokers is not None:
        states = states.filter(queue__broker__name__in=brokers)
    return list(states.order_by("queue__broker__name", "queue__name"))

"""Worker loss as an event (docs/operating.md, "Worker loss").

A Celery worker node writes its heartbeat (``dashboard.ProcessBeat``) every
``BATON_DASHBOARD_HEARTBEAT_S`` and deletes it when it stops cleanly. A node whose heartbeat
is older than ``BATON_WORKER_LOST_S`` is lost: one ``worker_lost`` event on every broker's
``SYSTEM.ADMIN.CHANNEL.EVENT`` (the worker fleet hosts every broker's channel agents, as IBM
MQ's channel initiator hosts its queue manager's channels), and the row's ``lost_at`` set,
so once per loss. When the node beats again: one ``worker_returned`` event, ``lost_at``
cleared. Each change is made under the row's lock, so however many processes evaluate, each
loss and return is announced once. Beat evaluates whenever it writes its own heartbeat
(``config/celery.py``); a pass where nothing changed is one read.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import transaction as db
from django.db.models import F, Q
from django.utils import timezone

from brokers.models import Broker
from brokers.operating.events import CHANNEL_EVENT_QUEUE, event_put

from ..models import ProcessBeat, ProcessKind


def _announce(row: ProcessBeat, body: dict) -> int:
    properties = {"event": body["event"], "worker": row.name}
    return sum(
        event_put(broker, CHANNEL_EVENT_QUEUE, {**body, "broker": broker}, properties)
        for broker in Broker.objects.order_by("name").values_list("name", flat=True)
    )


def workers_lost_evaluate(*, now=None) -> int:
    """Announce the worker nodes lost since the last evaluation and those back since their
    loss; returns how many event messages were put."""
    now = now or timezone.now()
    limit = now - timedelta(seconds=settings.BATON_WORKER_LOST_S)
    lost = Q(lost_at__isnull=True, seen_at__lt=limit)
    back = Q(lost_at__isnull=False, seen_at__gt=F("lost_at"))
    put = 0
    for pk in ProcessBeat.objects.filter(lost | back, kind=ProcessKind.WORKER).values_list("pk", flat=True):
        with db.atomic():  # the row locked and read again: each loss and return once
            row = ProcessBeat.objects.select_for_update().filter(pk=pk).first()
            if row is None:
                continue  # stopped cleanly or forgotten meanwhile
            common = {"worker": row.name, "host": row.host, "pid": row.pid, "at": now.isoformat()}
            if row.lost_at is None and row.seen_at < limit:
                body = {
                    "event": "worker_lost",
                    **common,
                    "last_seen": row.seen_at.isoformat(),
                    "worker_lost_s": settings.BATON_WORKER_LOST_S,
                }
                put += _announce(row, body)
                row.lost_at = now
            elif row.lost_at is not None and row.seen_at > row.lost_at:
                put += _announce(row, {"event": "worker_returned", **common, "lost_at": row.lost_at.isoformat()})
                row.lost_at = None
            else:
                continue
            row.save(update_fields=["lost_at"])
    return put


def workers_lost() -> list[ProcessBeat]:
    """The worker nodes lost now (announced, not back): what the console shows as alerts."""
    return list(ProcessBeat.objects.filter(kind=ProcessKind.WORKER, lost_at__isnull=False).order_by("name"))

"""Conflation: with a conflation interval I on a topic string's topic object, the first
publication after a quiet interval is delivered at once; publications within I of the last
delivery are held (the latest replaces any held before it) and the latest is delivered
when the interval ends — by the sweeper (a Celery beat task, pubsub.tasks), so a held
publication is delivered even when the process that received it has gone.

Locking (docs/concurrency.md): each topic string's ``Conflation`` row is locked
(``SELECT ... FOR UPDATE``; on SQLite the IMMEDIATE transaction serialises writers) by the
publisher deciding to deliver or hold, and by the sweeper delivering. The decision, the
delivery's puts and the row's update commit together, so a held publication is delivered
once: a second sweeper skips the locked row (``SKIP LOCKED``) or finds it no longer due.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import IntegrityError, connection, transaction as db
from django.utils import timezone

from brokers.definitions import definitions_checked
from brokers.models import Broker
from brokers.services.message_input import MessageInput
from baton_client.errors import BatonError
from transactions.durability import engine_step

from ..models import Conflation
from ..tree import tree_for
from .delivery import copies_deliver
from .stored import message_loaded, message_stored

log = logging.getLogger(__name__)


def _row_locked(*, broker: Broker, topic: str, at: datetime) -> tuple[Conflation, bool]:
    """The topic's row, locked; True if it was just created (first publication)."""
    row = Conflation.objects.select_for_update().filter(broker=broker, topic=topic).first()
    if row is not None:
        return row, False
    try:
        with db.atomic():
            return Conflation.objects.create(broker=broker, topic=topic, last_delivered_at=at), True
    except IntegrityError:  # created meanwhile by another publisher (PostgreSQL): wait for its lock
        return Conflation.objects.select_for_update().get(broker=broker, topic=topic), False


def conflation_admit(
    *, broker: Broker, topic: str, msg: MessageInput, msg_id: str, interval_ms: int, at: datetime
) -> bool:
    """Decide whether a publication outside a unit of work is delivered now (True) or held
    (False). Caller holds an open database transaction and delivers it when told to."""
    row, first = _row_locked(broker=broker, topic=topic, at=at)
    if first:
        return True
    interval = timedelta(milliseconds=interval_ms)
    if at < row.last_delivered_at + interval:
        body, fields = message_stored(msg)
        Conflation.objects.filter(pk=row.pk).update(
            held_msg_id=msg_id,
            held_body=body,
            held_message=fields,
            held_at=at,
            due_at=row.last_delivered_at + interval,
        )
        return False
    # A quiet interval has passed (or a held one is overdue): this one supersedes anything held.
    Conflation.objects.filter(pk=row.pk).update(
        last_delivered_at=at, held_msg_id="", held_body=None, held_message=None, held_at=None, due_at=None
    )
    return True


@dataclass
class SweepOutcome:
    delivered: int = 0  # held publications delivered
    copies: int = 0  # copies put on subscribers' queues
    failed: int = 0  # held publications kept for the next sweep (a durable subscriber's queue is full)


def conflation_sweep(*, now: datetime | None = None, limit: int = 500) -> SweepOutcome:
    """Deliver every held publication whose interval has ended, each in its own durable
    database transaction with its row locked, so that it is delivered once."""
    now = now or timezone.now()
    outcome = SweepOutcome()
    due = list(Conflation.objects.filter(due_at__lte=now).order_by("due_at").values_list("pk", flat=True)[:limit])
    for pk in due:
        try:
            with engine_step(durable=True):
                definitions_checked()
                rows = Conflation.objects.filter(pk=pk, due_at__lte=now).select_related("broker")
                if connection.features.has_select_for_update_skip_locked:
                    rows = rows.select_for_update(skip_locked=True, of=("self",))
                row = rows.first()
                if row is None:  # delivered meanwhile, by a publisher or another sweeper
                    continue
                tree = tree_for(broker_id=row.broker_id)
                subs = tree.active(tree.match(row.topic))
                outcome.copies += copies_deliver(
                    broker=row.broker,
                    subscriptions=subs,
                    topic=row.topic,
                    msg=message_loaded(row.held_body, row.held_message),
                    msg_id=row.held_msg_id,
                    transaction_id=None,
                )
                Conflation.objects.filter(pk=pk).update(
                    last_delivered_at=timezone.now(),
                    held_msg_id="",
                    held_body=None,
                    held_message=None,
                    held_at=None,
                    due_at=None,
                )
                outcome.delivered += 1
        except BatonError as exc:
            outcome.failed += 1
            log.warning("held publication on topic row %s not delivered yet: %s", pk, exc)
    return outcome

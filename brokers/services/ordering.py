"""Read order: which message comes next, for gets and browses.

Every message has a put sequence (its id) and, once its put commits, a commit sequence.
A queue's ``read_order`` picks one as its order key. Unordered gets take any available
message in delivery order (priority first on a priority queue, then the order key).
Ordered gets and ordered browses follow the order key alone and never skip a message:
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import F, Q, QuerySet

from ..dialects import dialect
from ..models import DeliverySequence, EnforceOrder, Message, Queue, ReadOrder, put_open_flag, put_units_open_only

#: Why an ordered get returned nothing although the queue is not empty.
REASON_IN_FLIGHT = "next_in_order_in_flight"
REASON_UNCOMMITTED = "next_in_order_uncommitted"


def order_key(queue: Queue) -> str:
    return "commit_seq" if queue.read_order == ReadOrder.COMMIT else "id"


def is_ordered(queue: Queue, requested: bool) -> bool:
    return requested or queue.enforce_order == EnforceOrder.YES


def not_expired(now) -> Q:
    return Q(expires_at__isnull=True) | Q(expires_at__gt=now)


def delivery_ordered(qs: QuerySet, queue: Queue, *, with_uncommitted: bool) -> QuerySet:
    """Unordered gets: priority (on a priority queue), then the order key. Uncommitted puts
    (pre-emptive gets) have no commit sequence yet: on a commit-ordered queue they come
    after the committed messages, in put order."""
    key = order_key(queue)
    fields: list = ["-priority"] if queue.delivery_sequence == DeliverySequence.PRIORITY else []
    if key == "commit_seq" and with_uncommitted:
        fields += [F("commit_seq").asc(nulls_last=True), "id"]
    else:
        fields.append(key)
    return qs.order_by(*fields)


@dataclass
class OrderedPick:
    messages: list[Message] = field(default_factory=list)
    reason: str | None = None


def ordered_getters_lock(queue: Queue) -> None:
    """Serialise ordered gets on a queue until the database transaction ends. On PostgreSQL
    a transaction-scoped advisory lock per queue, not the queue's row: a putter holds its
    unit of work's row and then wants the queue's row, and an ordered pre-emptive getter
    marks the putter's unit of work as linked, so holding the queue row here could
    deadlock. On SQLite writers are serialised already."""
    dialect().ordered_getters_lock(queue_id=queue.pk)


def ordered_pick(queue: Queue, *, now, batch: int, own_transaction: str | None, preemptive: bool) -> OrderedPick:
    """The next messages in the queue's order, stopping at the first one that cannot be
    taken now: in flight or locked by someone else (``next_in_order_in_flight``), or an
    uncommitted put on a put-ordered queue that this get may not take
    (``next_in_order_uncommitted``). Messages the caller's own unit of work already holds
    are passed over, so one unit of work can take a run of messages in order.

    Caller holds ``ordered_getters_lock``, so ordered gets on a queue never interleave."""
    key = order_key(queue)
    qs = Message.objects.filter(queue=queue).filter(not_expired(now)).annotate(put_open=put_open_flag())
    if key == "commit_seq":
        qs = qs.filter(commit_seq__isnull=False)
    pick = OrderedPick()
    for message in qs.order_by(key).iterator(chunk_size=max(batch * 2, 20)):
        put_units_open_only([message])
        if own_transaction and message.get_transaction_id == own_transaction:
            continue
        # a lock counts until housekeeping releases it, as for unordered gets
        if message.get_transaction_id is not None or message.lock_token:
            pick.reason = REASON_IN_FLIGHT
            break
        if message.put_transaction_id is not None:
            if not preemptive or message.put_transaction_id == own_transaction:
                pick.reason = REASON_UNCOMMITTED
                break
        pick.messages.append(message)
        if len(pick.messages) >= batch:
            break
    if pick.messages:
        pick.reason = None
    return pick

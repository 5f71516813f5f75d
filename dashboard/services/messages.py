"""The queue page's put and purge, each through the brokers' own services."""

from __future__ import annotations

from django.conf import settings

from brokers.services.message_input import MessageInput
from brokers.services.messages import message_get, message_put


def dashboard_put(
    *,
    broker: str,
    queue: str,
    message: MessageInput,
    user: str = "",
    actor=None,
) -> str:
    """Put one message outside any unit of work, as the queue page's form gave it (parsed by
    ``dashboard.forms.put_form``). Returns the new message's id. ``actor``: the signed-in
    user, whose rights the brokers' rule for indirect paths checks (an alias or remote
    queue's destination)."""
    result = message_put(
        broker=broker,
        queue=queue,
        messages=[message],
        syncpoint="no",
        put_application=f"dashboard:{user}"[:100],
        user=actor,
    )
    return result.messages[0].msg_id


def queue_purge(*, broker: str, queue: str, count: int) -> int:
    """Remove up to ``count`` available messages (the number the operator confirmed), by
    final gets in delivery order, so counters, reports and the journal stay as for any get.
    Messages under a unit of work or locked are left alone. Returns how many were removed.
    ``count`` is 0 or more (``dashboard.forms.purge_count`` checked it)."""
    removed = 0
    while removed < count:
        result = message_get(broker=broker, queue=queue, batch=min(count - removed, settings.BATON_MAX_BATCH))
        if not result.messages:
            break
        removed += len(result.messages)
    return removed


def message_remove(*, broker: str, queue: str, msg_id: str) -> bool:
    """Remove one available message by a final get of its id (journaled and counted as any
    get; no unit of work). False when it is not available: gone, in flight, locked or an
    uncommitted put (those are left alone, as purge leaves them)."""
    return bool(message_get(broker=broker, queue=queue, msg_id=msg_id).messages)

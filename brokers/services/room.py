"""A queue's room and its waiters: reserving and giving back depth and commit sequences (the
queue's row lock), and waking the gets that wait on a queue once the database transaction
commits. The bottom of the message store: it imports nothing of the services, so the
store, reports, reactions and locks all build on it.

Every function needs an open database transaction.
"""

from __future__ import annotations

from collections.abc import Iterable

from transactions.wakeups import wakeup_notify_on_commit

from .. import queries
from baton_client.errors import QueueFull
from ..models import Queue


def queue_wakeup_key(queue_id: int) -> str:
    """Woken when the queue may have changed for every getter: a commit, an immediate put, a
    message given back or removed."""
    return f"queue:{queue_id}"


def queue_put_wakeup_key(queue_id: int) -> str:
    """Woken by a put under a unit of work, which only a pre-emptive getter can take before
    it commits (the commit wakes ``queue_wakeup_key``): a getter that is not pre-emptive is
    not woken for nothing by every put of a unit of work."""
    return f"queue-put:{queue_id}"


def queue_wait_keys(queue_id: int, *, preemptive: bool) -> list[str]:
    """The keys a getter of the queue waits on."""
    return [queue_wakeup_key(queue_id), queue_put_wakeup_key(queue_id)] if preemptive else [queue_wakeup_key(queue_id)]


def queue_reserve(*, queue: Queue, count: int, commit_count: int, enforce_max_depth: bool = True) -> int:
    """Reserve room for ``count`` messages and ``commit_count`` commit sequences on a queue;
    return the first of those commit sequences. Locks the queue's row. One statement
    (``queries.queue_reserve``) does the depth check and the reservation, so competing
    putters can never overshoot max_depth."""
    base = queries.queue_reserve(
        queue_id=queue.pk, count=count, commit_count=commit_count, max_depth_checked=enforce_max_depth
    )
    if base is None:
        raise QueueFull(
            f"Queue {queue.name!r} is full (max depth {queue.max_depth}).",
            broker=queue.broker.name,
            queue=queue.name,
            max_depth=queue.max_depth,
        )
    return base


def queues_lock(*, queue_ids) -> None:
    """Lock these queues' rows in id order before changing any of them, so that two commits
    or rollbacks touching the same queues in different orders cannot deadlock (PostgreSQL;
    on SQLite writers are serialised already)."""
    queries.queues_lock(queue_ids=queue_ids, even_one=True)


def queue_release(*, counts: dict[int, int]) -> None:
    """Give back room on queues whose messages were removed. Locks those queues' rows."""
    queries.queues_release(counts=counts)


def queues_woken(queue_ids: Iterable[int], *, uncommitted_puts: bool = False) -> None:
    """Wake these queues' getters once the caller's database transaction commits;
    ``uncommitted_puts``: it only put messages under a unit of work (pre-emptive getters)."""
    key = queue_put_wakeup_key if uncommitted_puts else queue_wakeup_key
    wakeup_notify_on_commit([key(q) for q in set(queue_ids)])

"""Expiry, timeouts and restart recovery: the work the housekeeping task does every interval."""

from __future__ import annotations

from collections import Counter

from django.db import transaction as db
from django.utils import timezone

from transactions.journal import journal_event, journal_record
from transactions.manager import transaction_rollback, transactions_time_out
from transactions.models import OPEN_STATES, JournalKind, Transaction

from .. import queries
from ..models import Message, put_committed_q
from .locks import locks_expire
from .reports import EXPIRY, reports_send
from .store import queue_release


def messages_expire(*, limit: int = 1000) -> int:
    """Remove up to ``limit`` expired messages that no unit of work holds. Reads the expiry
    index from its oldest end, so it never scans a whole queue. Gets already never return
    expired messages; this only reclaims their room."""
    now = timezone.now()
    with db.atomic():
        rows = list(
            Message.objects.filter(
                put_committed_q(), expires_at__lte=now, get_transaction__isnull=True, lock_token__isnull=True
            )
            .select_related("queue__broker")
            .defer("body")
            .order_by("expires_at")[:limit]
        )
        if not rows:
            return 0
        Message.objects.filter(pk__in=[m.pk for m in rows]).delete()
        queue_release(counts=Counter(m.queue_id for m in rows))
        journal_record(
            events=[
                journal_event(
                    JournalKind.EXPIRE, broker=m.queue.broker.name, queue=m.queue.name, msg_id=m.msg_id, at=now
                )
                for m in rows
            ]
        )
        reports_send(originals=[m for m in rows if m.report], feedback=EXPIRY)
    return len(rows)


def dedup_keys_sweep(*, limit: int = 5000) -> int:
    """Forget up to ``limit`` duplicate-detection keys whose retention has ended (a put
    already takes such a key as new; this only reclaims their rows). Returns how many."""
    with db.atomic():
        return queries.dedup_keys_forget(now=timezone.now(), limit=limit)


def queue_releases_fold() -> int:
    """Fold every queue's releases into its ``reserved_depth`` (``QueueRelease``), one queue
    per database transaction; returns how much room was folded."""
    folded = 0
    for queue_id in queries.queues_with_releases():
        with db.atomic():
            folded += queries.queue_releases_fold(queue_id=queue_id)
    return folded


def housekeeping_run() -> dict[str, int]:
    """One pass: time out overdue units of work nobody met, release locks that ran out that
    no get met, remove expired messages, forget duplicate-detection keys past their
    retention, fold the queues' releases into their counters."""
    timed_out = transactions_time_out()
    unlocked = locks_expire()
    expired = 0
    while (n := messages_expire()) > 0:
        expired += n
    forgotten = 0
    while (n := dedup_keys_sweep()) > 0:
        forgotten += n
    return {
        "timed_out": len(timed_out),
        "unlocked": unlocked,
        "expired": expired,
        "dedup_keys_forgotten": forgotten,
        "releases_folded": queue_releases_fold(),
    }


def brokers_recover() -> dict[str, int]:
    """What a broker restart does (``platform/up`` runs it before serving): units of work
    left open by the previous run are rolled back, and non-persistent messages are
    discarded, as IBM MQ does at queue manager restart."""
    rolled_back = 0
    # A channel's units of work are in doubt, not lost: its agent resolves them with the receiver.
    for transaction_id in (
        Transaction.objects.filter(state__in=OPEN_STATES)
        .exclude(owner__startswith="channel:")
        .values_list("pk", flat=True)
    ):
        if transaction_rollback(
            transaction_id=transaction_id, reason="broker restart", require_open=False
        ).rolled_back_now:
            rolled_back += 1
    now = timezone.now()
    with db.atomic():
        rows = list(
            Message.objects.filter(persistent=False).values_list(
                "id", "queue_id", "msg_id", "queue__name", "queue__broker__name"
            )
        )
        Message.objects.filter(pk__in=[r[0] for r in rows]).delete()
        queue_release(counts=Counter(r[1] for r in rows))
        journal_record(
            events=[journal_event(JournalKind.DISCARD, broker=r[4], queue=r[3], msg_id=r[2], at=now) for r in rows]
        )
    return {"rolled_back": rolled_back, "discarded": len(rows)}

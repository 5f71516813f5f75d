"""Reactive messages: a message that names an earlier one (``refers_to``) and an action on
it — cancel, replace its body, or reprioritise it. The action is applied, atomically with
the reactive message's own put (at once, or when its unit of work commits), if the earlier
message is still queued on the same queue: committed, not in flight, not locked. If not,
nothing happens to it, and an exception report is sent when the reactive message asked for
one. The reactive message itself is consumed by the broker; it is never queued.
"""

from __future__ import annotations

from django.utils import timezone

from transactions.journal import journal_event, journal_record
from transactions.models import JournalKind

from ..models import Message, PendingReaction, Queue, ReactiveAction, put_committed_q
from .reports import EXCEPTION, report_send
from .room import queue_release, queues_woken


def reaction_apply(*, queue: Queue, reaction: PendingReaction) -> bool:
    """Apply one reaction; returns whether it was applied. Caller holds an open database
    transaction (the target message's row is locked here)."""

    target = (
        Message.objects.select_for_update()
        .filter(
            put_committed_q(),
            queue=queue,
            msg_id=reaction.target_msg_id,
            get_transaction__isnull=True,
            lock_token__isnull=True,
        )
        .first()
    )
    now = timezone.now()
    if target is not None and target.expires_at is not None and target.expires_at <= now:
        target = None
    if target is None:
        journal_record(
            events=[
                journal_event(
                    JournalKind.REACT,
                    broker=queue.broker.name,
                    queue=queue.name,
                    msg_id=reaction.msg_id,
                    at=now,
                    refers_to=reaction.target_msg_id,
                    action=reaction.action,
                    applied=False,
                )
            ]
        )
        report_send(
            original=reaction,
            broker_name=queue.broker.name,
            queue_name=queue.name,
            feedback=EXCEPTION,
            reason=f"{reaction.action}: message {reaction.target_msg_id} is not queued",
        )
        return False
    if reaction.action == ReactiveAction.CANCEL:
        Message.objects.filter(pk=target.pk).delete()
        queue_release(counts={queue.pk: 1})
    elif reaction.action == ReactiveAction.REPLACE:
        Message.objects.filter(pk=target.pk).update(body=reaction.body)
    elif reaction.action == ReactiveAction.REPRIORITISE and reaction.priority is not None:
        Message.objects.filter(pk=target.pk).update(priority=reaction.priority)
    journal_record(
        events=[
            journal_event(
                JournalKind.REACT,
                broker=queue.broker.name,
                queue=queue.name,
                msg_id=reaction.msg_id,
                at=now,
                refers_to=reaction.target_msg_id,
                action=reaction.action,
                applied=True,
            )
        ]
    )
    queues_woken([queue.pk])
    return True


def reactions_commit(*, transaction_ids: list[str]) -> None:
    """Apply the reactions of committing units of work, in the order they were put."""
    for reaction in (
        PendingReaction.objects.filter(transaction_id__in=transaction_ids)
        .select_related("queue__broker")
        .order_by("id")
    ):
        reaction_apply(queue=reaction.queue, reaction=reaction)
    PendingReaction.objects.filter(transaction_id__in=transaction_ids).delete()


def reactions_rollback(*, transaction_id: str) -> None:
    PendingReaction.objects.filter(transaction_id=transaction_id).delete()

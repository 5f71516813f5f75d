"""Peek-lock: what happens to a peek-locked message after it was handed out.

A peek-locked message carries ``lock_token`` and ``locked_until``; gets pass it over until
its lock ends. Its holder then completes it (removed; under a unit of work: removed when
that commits, and if that rolls back the lock stays), abandons it (unlocked at once),
renews the lock, or dead-letters it. A lock that has run out is released by the next get
on its queue, before that get chooses (``locks_lapsed_release``), so the message is
available to the very next receive; housekeeping releases those no get met (``locks_expire``),
tidying only. Either way its holder hears lock_lost. Whenever a message comes back from a
lock with a delivery count at its queue's backout threshold (> 0; the delivery limit) it
moves to the dead-letter queue instead.

Locking: the message row (``FOR UPDATE``), then the queue row for a removal or a move.
"""

from __future__ import annotations

from datetime import timedelta

from django.db import transaction as db
from django.utils import timezone

from transactions.durability import engine_step
from transactions.journal import journal_event, journal_record
from transactions.manager import transaction_timeouts_applied
from transactions.models import JournalKind

from baton_client.errors import Conflict, LockLost, NotFound
from .. import queries
from ..definitions import definitions_checked, queue_cached
from ..models import Message, Queue
from .messages.common import unit_of_work_joined
from .store import dead_letter_target, message_move, queue_release, queues_woken


class LockNotFound(NotFound):
    """No message is locked with that token."""


def _locked_message(token: str, now, found=None) -> Message | queries.LockedMessage:
    """The message locked with ``token``, its row locked, its queue and broker attached;
    ``found``: the caller's read of it when it has made one (with the lock):
    ``queries.locks_to_complete``'s answer, the message then a ``LockedMessage``. Refused
    when the lock is unknown or ran out."""
    if found is None:
        found = queries.message_by_lock_token(token=token, lock=True)
    message = None
    if found is not None:
        message, version, broker, queue = found
        definitions_checked(version)
        message.queue = queue_cached(broker=broker, name=queue)
    if message is None and Message.objects.filter(lapsed_lock_token=token).exists():
        raise LockLost(f"The lock {token} expired and the message was released.", lock_token=token)
    if message is None:
        raise LockNotFound(f"No message is locked with token {token}.", lock_token=token)
    if message.get_transaction_id is None and message.locked_until <= now:
        raise LockLost(f"The lock {token} expired at {message.locked_until.isoformat()}.", lock_token=token)
    return message


def _unlocked_or_dead_lettered(message: Message, *, reason_if_over: str, lapsed: bool = False) -> str:
    """Release a lock; past the delivery limit, move the message to the dead-letter queue.
    Caller holds the message row."""
    queue = message.queue
    if queue.backout_threshold and message.delivery_count >= queue.backout_threshold:
        target = dead_letter_target(queue=queue, prefer_backout=False)
        if target is not None:
            message.lapsed_lock_token = message.lock_token if lapsed else message.lapsed_lock_token
            message.lock_token = message.locked_until = None
            message_move(message=message, source=queue, target=target, reason=reason_if_over)
            return "dead_lettered"
    Message.objects.filter(pk=message.pk).update(
        lock_token=None,
        locked_until=None,
        **({"lapsed_lock_token": message.lock_token} if lapsed else {}),
    )
    queues_woken([queue.pk])
    return "available"


def lock_complete(*, token: str, transaction_id: str | None = None, user=None) -> str:
    """Remove a locked message. Under a unit of work it is removed when that commits; if
    that rolls back, the message is still locked (and the lock may still expire). The unit
    of work must be ``user``'s (docs/permissions.md; None: system code)."""
    now = timezone.now()
    # under a unit of work nothing is final before its commit (which is durable): no sync here
    with transaction_timeouts_applied(), engine_step(durable=not transaction_id):
        txn = None
        found = next(iter(queries.locks_to_complete(tokens=[token], lock=not transaction_id)), None)
        if transaction_id:
            # the unit of work's row before the message row: the order every get keeps
            txn = unit_of_work_joined(transaction_id=transaction_id, broker=found[2] if found else "", user=user)
            if found is not None:  # now the message row, locked (SQLite: the write lock holds it)
                found = next(iter(queries.locks_to_complete(tokens=[token], lock=True)), None)
        message = _locked_message(token, now, found)
        if message.get_transaction_id is not None:
            raise Conflict(
                f"The message locked with {token} is already being completed under a unit of work.", lock_token=token
            )
        queue = message.queue
        if txn is not None:
            queries.messages_get_transaction_set(message_ids=[message.pk], transaction_id=txn.id)
            outcome = "pending_commit"
        else:
            queries.message_delete(message_id=message.pk)
            queue_release(counts={queue.pk: 1})
            queues_woken([queue.pk])
            outcome = "completed"
        journal_record(
            events=[
                journal_event(
                    JournalKind.GET,
                    broker=queue.broker.name,
                    queue=queue.name,
                    msg_id=message.msg_id,
                    at=now,
                    transaction_id=txn.id if txn else None,
                    put_time=message.put_time.isoformat(),
                    completed_lock=True,
                )
            ]
        )
    return outcome


def locks_complete(*, tokens: list[str], transaction_id: str | None, user=None) -> str:
    """Complete several locked messages in one database transaction: all of them or, on the
    first refusal (the same errors as :func:`lock_complete`, checked in the order given),
    none. Under a unit of work each is removed when it commits (if it rolls back they stay
    locked): "pending_commit". Without one they are removed now, durably: "completed" (a
    STOMP transaction that only acknowledged, at its COMMIT). A STOMP transaction's
    pipelined ACKs arrive this way."""
    tokens = list(dict.fromkeys(tokens))
    now = timezone.now()
    # under a unit of work nothing is final before its commit (which is durable): no sync here
    with transaction_timeouts_applied(), engine_step(durable=not transaction_id):
        read = queries.locks_to_complete(tokens=tokens, lock=not transaction_id)
        txn = None
        if transaction_id:
            # each broker's check, as one complete makes it
            for broker in sorted({broker for _, _, broker, _ in read}) or [""]:
                txn = unit_of_work_joined(transaction_id=transaction_id, broker=broker, user=user, locked=txn)
            if read:  # now the message rows, locked (SQLite: the write lock holds them)
                read = queries.locks_to_complete(tokens=tokens, lock=True)
        found = {}
        for message, version, broker, queue in read:
            definitions_checked(version)
            message.queue = queue_cached(broker=broker, name=queue)
            found[message.lock_token] = message
        messages = []
        for token in tokens:
            message = found.get(token) or _locked_message(token, now)  # not found: why, as one complete says it
            if message.get_transaction_id is None and message.locked_until <= now:
                raise LockLost(f"The lock {token} expired at {message.locked_until.isoformat()}.", lock_token=token)
            if message.get_transaction_id is not None:
                raise Conflict(
                    f"The message locked with {token} is already being completed under a unit of work.",
                    lock_token=token,
                )
            messages.append(message)
        if txn is not None:
            queries.messages_get_transaction_set(message_ids=[m.pk for m in messages], transaction_id=txn.id)
        else:
            queries.messages_delete(message_ids=[m.pk for m in messages])
            counts: dict[int, int] = {}
            for m in messages:
                counts[m.queue.pk] = counts.get(m.queue.pk, 0) + 1
            queue_release(counts=counts)
            queues_woken(list(counts))
        journal_record(
            events=[
                journal_event(
                    JournalKind.GET,
                    broker=m.queue.broker.name,
                    queue=m.queue.name,
                    msg_id=m.msg_id,
                    at=now,
                    transaction_id=txn.id if txn else None,
                    put_time=m.put_time.isoformat(),
                    completed_lock=True,
                )
                for m in messages
            ]
        )
    return "pending_commit" if txn is not None else "completed"


def lock_abandon(*, token: str) -> str:
    """Give the message back at once (its delivery count stays raised)."""
    now = timezone.now()
    with db.atomic():
        message = _locked_message(token, now)
        if message.get_transaction_id is not None:
            raise Conflict(
                f"The message locked with {token} is being completed under a unit of work.", lock_token=token
            )
        return _unlocked_or_dead_lettered(
            message,
            reason_if_over=f"delivery count {message.delivery_count} reached the delivery limit",
        )


def lock_renew(*, token: str) -> Message:
    """Extend the lock by the queue's lock duration from now."""
    now = timezone.now()
    with db.atomic():
        message = _locked_message(token, now)
        message.locked_until = now + timedelta(milliseconds=message.queue.lock_duration_ms)
        Message.objects.filter(pk=message.pk).update(locked_until=message.locked_until)
    return message


def lock_dead_letter(*, token: str, reason: str) -> Message:
    """Move the locked message to the broker's dead-letter queue with the holder's reason
    (1 to 200 characters, not blank: ``LockDeadLetter.Input`` checked it)."""
    now = timezone.now()
    with db.atomic():
        message = _locked_message(token, now)
        if message.get_transaction_id is not None:
            raise Conflict(
                f"The message locked with {token} is being completed under a unit of work.", lock_token=token
            )
        target = dead_letter_target(queue=message.queue, prefer_backout=False)
        if target is None:
            raise Conflict("The broker has no usable dead-letter queue.", lock_token=token)
        message.lock_token = message.locked_until = None
        return message_move(message=message, source=message.queue, target=target, reason=reason)


def _expired_reason(delivery_count: int) -> str:
    return f"lock expired; delivery count {delivery_count} reached the delivery limit"


def locks_lapsed_release(*, queue: Queue, now) -> int:
    """Inside a get's database transaction, before it chooses: release the queue's locks
    that ran out by ``now``, exactly as housekeeping would (the delivery count stays; at the
    delivery limit the message goes to the dead-letter queue, if the broker has a usable
    one). Returns how many were released."""
    released = queries.messages_locks_lapse(queue_id=queue.pk, now=now)
    over = [pk for pk, count in released if queue.backout_threshold and count >= queue.backout_threshold]
    target = dead_letter_target(queue=queue, prefer_backout=False) if over else None
    if target is not None:
        for message in Message.objects.filter(pk__in=over).order_by("id"):
            message_move(message=message, source=queue, target=target, reason=_expired_reason(message.delivery_count))
    if released:
        queues_woken([queue.pk])
    return len(released)


def locks_expire(*, limit: int = 1000) -> int:
    """Release locks that have run out that no get has met yet (housekeeping, tidying); returns
    how many."""
    now = timezone.now()
    released = 0
    with db.atomic():
        expired = list(
            Message.objects.select_for_update()
            .select_related("queue__broker")
            .filter(lock_token__isnull=False, locked_until__lte=now, get_transaction__isnull=True)
            .order_by("locked_until")[:limit]
        )
        for message in expired:
            _unlocked_or_dead_lettered(
                message,
                reason_if_over=_expired_reason(message.delivery_count),
                lapsed=True,
            )
            released += 1
    return released

"""The message store: moving messages to backout and dead-letter queues, and the resource
manager that carries units of work's effects on messages (queue counters and wake-ups: room.py).

Locking: a queue's row is locked by the UPDATE that takes room or commit sequences on it
(``reserved_depth``, ``next_commit_seq``); commit sequences are assigned while it is held,
so they follow commit order on PostgreSQL too. Room given back goes to the queue's release
rows (``QueueRelease``), not its row. Functions here lock queue rows in queue id order, then
release rows, then message rows. Every function needs an open database transaction.
"""

from __future__ import annotations

from django.db.models import F
from django.utils import timezone

from transactions.journal import journal_event, journal_record
from transactions.manager import transaction_mark
from transactions.models import JournalKind
from transactions.wakeups import wakeup_notify_on_commit

from .. import queries
from ..dialects import dialect
from ..models import ClientSession, Connection, Message, Queue, QueueKind, put_open_flag
from .reactions import reactions_commit, reactions_rollback
from .reports import COA, COD, EXCEPTION, report_send, reports_send
from .room import queue_release, queue_reserve, queue_wakeup_key, queues_lock, queues_woken  # noqa: F401  (re-exported)

#: Transaction marks this resource manager sets (see transactions.manager.transaction_mark).
MARK_SESSIONS = "sessions"
MARK_REPORTS = "reports"
MARK_REACTIONS = "reactions"
MARK_DEDUP = "dedup"  # took duplicate-detection keys: a rollback frees them


def dead_letter_target(*, queue: Queue, prefer_backout: bool) -> Queue | None:
    """Where a message that cannot stay on ``queue`` goes: its backout queue (if asked and
    usable), else its broker's dead-letter queue, else nowhere (it stays)."""
    names = ([queue.backout_queue] if prefer_backout and queue.backout_queue else []) + [queue.broker.dead_letter_queue]
    for name in names:
        target = Queue.objects.filter(broker_id=queue.broker_id, name=name, kind=QueueKind.LOCAL).first()
        if target is not None and target.pk != queue.pk and target.put_enabled:
            return target
    return None


def message_move(*, message: Message, source: Queue, target: Queue, reason: str) -> Message:
    """Move a message to another queue on the same broker as a new put there (so it takes
    its place at the end of the target's order), recording why and where from."""
    base = queue_reserve(queue=target, count=1, commit_count=1, enforce_max_depth=False)
    old_pk = message.pk
    Message.objects.filter(pk=old_pk).delete()
    queue_release(counts={source.pk: 1})
    message.pk = None
    message.id = None
    message.queue = target
    message.commit_seq = base
    message.get_transaction = None
    message.dead_letter_reason = reason
    message.dead_letter_queue = source.name
    message.save(force_insert=True)
    journal_record(
        events=[
            journal_event(
                JournalKind.DEAD_LETTER,
                broker=source.broker.name,
                queue=source.name,
                msg_id=message.msg_id,
                target=target.name,
                reason=reason,
            )
        ]
    )
    wakeup_notify_on_commit([queue_wakeup_key(target.pk)])
    report_send(
        original=message, broker_name=source.broker.name, queue_name=source.name, feedback=EXCEPTION, reason=reason
    )
    return message


def client_sessions_note(
    *, broker_id: int, put: dict[str, str] | None = None, got: dict[str, str] | None = None
) -> None:
    """Remember the last put / got msg_id per connection's user and client name (a persistent session).
    ``put`` and ``got`` map connection id → msg_id."""
    conn_ids = set(put or {}) | set(got or {})
    if not conn_ids:
        return
    names = Connection.objects.filter(conn_id__in=conn_ids).values_list("conn_id", "client_name", "user_id")
    for conn_id, client_name, user_id in names:
        changes = {}
        if put and conn_id in put:
            changes["last_put_msg_id"] = put[conn_id]
        if got and conn_id in got:
            changes["last_got_msg_id"] = got[conn_id]
        ClientSession.objects.update_or_create(
            broker_id=broker_id, client_name=client_name, user_id=user_id, defaults=changes
        )


def connection_pending_note(
    *, connection: Connection, transaction, put: str | None = None, got: str | None = None
) -> None:
    """Note the connection's last put / got msg_id under a unit of work; its client session
    remembers them when that unit of work commits."""
    changes: dict = {"pending_transaction": transaction}
    if put:
        changes["pending_put_msg_id"] = put
    if got:
        changes["pending_got_msg_id"] = got
    if connection.pending_transaction_id not in (None, transaction.id):
        changes.setdefault("pending_put_msg_id", "")
        changes.setdefault("pending_got_msg_id", "")
    Connection.objects.filter(pk=connection.pk).update(**changes)
    connection.pending_transaction_id = transaction.id
    transaction_mark(transaction=transaction, mark=MARK_SESSIONS)


class MessageStore:
    """The resource manager for messages, registered with the transaction manager."""

    def resources_commit(self, *, transaction_ids: list[str], marks: set[str]) -> None:
        """Gets under these transactions remove their messages; puts become available with
        commit sequences in put order. A message both put and gotten inside the group is
        removed without ever becoming available."""
        reported_puts, reported_gets = [], []
        if MARK_REPORTS in marks:  # read before the commit changes or removes them
            reported_puts = list(
                Message.objects.filter(put_transaction_id__in=transaction_ids)
                .exclude(get_transaction_id__in=transaction_ids)
                .exclude(reply_to_queue="")
                .select_related("queue__broker")
            )
            reported_gets = list(
                Message.objects.filter(get_transaction_id__in=transaction_ids)
                .exclude(reply_to_queue="")
                .select_related("queue__broker")
            )
        keys = dialect().messages_commit(transaction_ids=transaction_ids)
        if MARK_SESSIONS in marks:
            for conn in Connection.objects.filter(pending_transaction_id__in=transaction_ids):
                client_sessions_note(
                    broker_id=conn.broker_id,
                    put={conn.conn_id: conn.pending_put_msg_id} if conn.pending_put_msg_id else None,
                    got={conn.conn_id: conn.pending_got_msg_id} if conn.pending_got_msg_id else None,
                )
            Connection.objects.filter(pending_transaction_id__in=transaction_ids).update(
                pending_transaction=None,
                pending_put_msg_id="",
                pending_got_msg_id="",
            )
        wakeup_notify_on_commit(keys)
        # a message got inside the group whose put commits with it: its put's report too
        group = set(transaction_ids)
        reports_send(
            originals=reported_puts + [m for m in reported_gets if m.put_transaction_id in group], feedback=COA
        )
        reports_send(originals=reported_gets, feedback=COD)
        if MARK_REACTIONS in marks:
            reactions_commit(transaction_ids=transaction_ids)

    def resources_rollback(self, *, transaction_id: str, reason: str, marks: set[str]) -> None:
        """Puts vanish; gets return with backout count + 1, and a message whose backout
        count reaches its queue's backout threshold moves to the backout queue (or the
        dead-letter queue) with the reason recorded."""
        if MARK_REACTIONS in marks:
            reactions_rollback(transaction_id=transaction_id)
        if MARK_SESSIONS in marks:
            Connection.objects.filter(pending_transaction_id=transaction_id).update(
                pending_transaction=None,
                pending_put_msg_id="",
                pending_got_msg_id="",
            )
        removed, got = queries.transaction_counts(transaction_id=transaction_id)
        touched = set(removed) | set(got)
        names = queries.queues_backout_info(queue_ids=got) if got else {}
        if not any(threshold for _, _, threshold in names.values()):  # nothing can move: the hot path
            self._rollback_plain(transaction_id=transaction_id, removed=removed, names=names, dedup=MARK_DEDUP in marks)
            return
        if not got:
            queries.queues_lock(queue_ids=touched)
        else:  # and the backout and dead-letter queues messages may move to
            names = Queue.objects.filter(pk__in=touched).values_list(
                "broker_id", "backout_queue", "broker__dead_letter_queue"
            )
            targets = Queue.objects.none()
            for broker_id, backout, dlq in names:
                targets = targets | Queue.objects.filter(broker_id=broker_id, name__in=[n for n in (backout, dlq) if n])
            queues_lock(queue_ids=touched | set(targets.values_list("pk", flat=True)))
        if removed:  # the queue rows first (lock order), then the messages
            queries.queues_release(counts=removed)
            queries.messages_delete_put(transaction_id=transaction_id)
        if MARK_DEDUP in marks:  # after the queue rows (lock order: queue row, then key entries)
            queries.dedup_keys_release(transaction_id=transaction_id)
        if not got:
            return
        # A peek-locked message completed under this unit of work keeps its lock.
        relocked = Message.objects.filter(get_transaction_id=transaction_id, lock_token__isnull=False)
        relocked_queues = set(relocked.values_list("queue_id", flat=True))
        if relocked_queues:
            relocked.update(get_transaction=None)
        restored = list(
            Message.objects.filter(get_transaction_id=transaction_id)
            .select_related("queue__broker")
            .annotate(put_open=put_open_flag())
            .order_by("id")
        )
        if not restored:
            return
        Message.objects.filter(get_transaction_id=transaction_id).update(
            get_transaction=None,
            backout_count=F("backout_count") + 1,
        )
        now = timezone.now()
        events = []
        for message in restored:
            message.get_transaction = None
            message.backout_count += 1
            queue = message.queue
            events.append(
                journal_event(
                    JournalKind.BACKOUT,
                    broker=queue.broker.name,
                    queue=queue.name,
                    transaction_id=transaction_id,
                    msg_id=message.msg_id,
                    backout_count=message.backout_count,
                    at=now,
                )
            )
            over = queue.backout_threshold and message.backout_count >= queue.backout_threshold
            if over and not message.put_open:
                target = dead_letter_target(queue=queue, prefer_backout=True)
                if target is not None:
                    message_move(
                        message=message,
                        source=queue,
                        target=target,
                        reason=f"backout count {message.backout_count} reached threshold {queue.backout_threshold}",
                    )
        journal_record(events=events)
        wakeup_notify_on_commit({queue_wakeup_key(m.queue_id) for m in restored})

    @staticmethod
    def _rollback_plain(
        *,
        transaction_id: str,
        removed: dict[int, int],
        names: dict[int, tuple[str, str, int]],
        dedup: bool = False,
    ) -> None:
        """A rollback whose gets cannot move any message (no backout threshold on their
        queues): puts go and gets return (``dialect().messages_rollback``), then the
        duplicate-detection keys it took are freed."""
        keys = dialect().messages_rollback(
            transaction_id=transaction_id, removed=removed, names=names, now=timezone.now()
        )
        if dedup:
            queries.dedup_keys_release(transaction_id=transaction_id)
        wakeup_notify_on_commit(keys)

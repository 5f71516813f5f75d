"""Report messages: confirm on arrival (coa), confirm on delivery (cod), expiry and
exception. A report goes to the original message's reply-to queue (on its reply-to broker,
or through the transmission queue named after that broker), with ``msg_type`` report,
``correl_id`` = the original msg_id and ``feedback`` saying which report it is.

A report goes where any message would (docs/permissions.md, "Indirect paths"): to the
reply-to queue on this broker, or over the transmission queue named after the reply-to
broker; never straight into another broker's queue. The put that asked for it was refused
unless its user may put where the report finally arrives. A report respects its queue's
max depth and put inhibition: one that cannot be put there goes to the dead-letter queue
of the broker it was made on, with the reason (``dead_letter_reason``); one with no
dead-letter queue either is recorded in the journal and dropped. Caller holds an open
database transaction; the report commits with the event it reports.
"""

from __future__ import annotations

from django.utils import timezone

from transactions.journal import journal_event, journal_record
from transactions.models import JournalKind

from ..ids import id_new
from .. import queries
from ..models import Broker, Message, MessageType, Queue, QueueKind, QueueUsage
from .room import queues_woken

COA, COD, EXPIRY, EXCEPTION = "coa", "cod", "expiry", "exception"


def _local_queue(broker_name: str, name: str) -> Queue | None:
    target = Queue.objects.select_related("broker").filter(broker__name=broker_name, name=name).first()
    if target is not None and target.kind == QueueKind.ALIAS:
        target = Queue.objects.select_related("broker").filter(broker=target.broker, name=target.target_queue).first()
    return target if target is not None and target.kind == QueueKind.LOCAL else None


def _report_destination(*, original: Message, broker_name: str) -> tuple[Queue | None, dict | None]:
    """The reply-to queue on this broker; for another broker, the transmission queue named
    after it (so the report travels over the channel as any message would)."""
    to_broker = original.reply_to_broker or broker_name
    if to_broker == broker_name:
        return _local_queue(broker_name, original.reply_to_queue), None
    xmitq = (
        Queue.objects.select_related("broker")
        .filter(
            broker__name=broker_name,
            name=to_broker,
            usage=QueueUsage.TRANSMISSION,
            kind=QueueKind.LOCAL,
        )
        .first()
    )
    if xmitq is not None:
        return xmitq, {"broker": to_broker, "queue": original.reply_to_queue}
    return None, None


def _dead_letter_queue(broker_name: str) -> Queue | None:
    name = Broker.objects.filter(name=broker_name).values_list("dead_letter_queue", flat=True).first()
    return _local_queue(broker_name, name) if name else None


def _placed(
    *, target: Queue | None, original: Message, broker_name: str, feedback: str
) -> tuple[Queue | None, int | None, str]:
    """Where the report goes and its commit sequence: its destination while that takes it
    (put enabled, under max depth), else the dead-letter queue with the reason."""
    where = f"{original.reply_to_broker or broker_name}/{original.reply_to_queue}"
    if target is None:
        why = f"{feedback} report: no route to {where}"
    elif not target.put_enabled:
        why = f"{feedback} report: puts disabled on {where}"
    else:
        base = queries.queue_reserve(queue_id=target.pk, count=1, commit_count=1, max_depth_checked=True)
        if base is not None:
            return target, base, ""
        why = f"{feedback} report: queue full ({where}, max depth {target.max_depth})"
    dead = _dead_letter_queue(broker_name)
    if dead is None:
        return None, None, why
    return dead, queries.queue_reserve(queue_id=dead.pk, count=1, commit_count=1, max_depth_checked=False), why


def report_send(
    *, original: Message, broker_name: str, queue_name: str, feedback: str, reason: str = ""
) -> Message | None:
    """Put a ``feedback`` report about ``original`` (which was on ``broker_name``/``queue_name``)
    if it asked for one. Returns the report, or None if none was asked for or it had nowhere to go."""
    if feedback not in (original.report or []) or not original.reply_to_queue:
        return None

    target, header = _report_destination(original=original, broker_name=broker_name)
    now = timezone.now()
    target, base, why = _placed(target=target, original=original, broker_name=broker_name, feedback=feedback)
    if target is None:
        journal_record(
            events=[
                journal_event(
                    JournalKind.DEAD_LETTER,
                    broker=broker_name,
                    queue=queue_name,
                    msg_id=original.msg_id,
                    at=now,
                    reason=f"{why}; no dead-letter queue",
                )
            ]
        )
        return None
    report = Message.objects.create(
        queue=target,
        msg_id=id_new(),
        correl_id=original.msg_id,
        msg_type=MessageType.REPORT,
        feedback=feedback,
        priority=original.priority or 0,
        persistent=getattr(original, "persistent", True),
        put_time=now,
        put_application="baton",
        properties={
            "original_broker": broker_name,
            "original_queue": queue_name,
            **({"reason": reason} if reason else {}),
        },
        body=b"",
        commit_seq=base,
        transmission_header=None if why else header,
        dead_letter_reason=why[:200],
        dead_letter_queue=original.reply_to_queue[:48] if why else "",
    )
    journal_record(
        events=[
            journal_event(
                JournalKind.DEAD_LETTER if why else JournalKind.PUT,
                broker=target.broker.name,
                queue=target.name,
                msg_id=report.msg_id,
                at=now,
                report=feedback,
                about=original.msg_id,
                **({"reason": why} if why else {}),
            )
        ]
    )
    queues_woken([target.pk])
    return report


def reports_send(*, originals: list[Message], feedback: str, reason: str = "") -> None:
    """``report_send`` for messages whose ``queue`` (with its broker) is loaded."""
    for original in originals:
        if feedback in (original.report or []):
            report_send(
                original=original,
                broker_name=original.queue.broker.name,
                queue_name=original.queue.name,
                feedback=feedback,
                reason=reason,
            )

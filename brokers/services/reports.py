"""Report messages: confirm on arrival (coa), confirm on delivery (cod), expiry and
exception. A report goes to the original message's reply-to queue (on its reply-to broker,
or through the transmission queue named after that broker), with ``msg_type`` report,
``correl_id`` = the original msg_id and ``feedback`` saying which report it is.

Reports are never refused: they are put beyond a full queue's max depth (as they would be
on a dead-letter queue); one that has nowhere to go is recorded in the journal and dropped.
Caller holds an open database transaction; the report commits with the event it reports.
"""
from __future__ import annotations

from django.utils import timezone

from transactions.journal import journal_event, journal_record
from transactions.models import JournalKind

from ..ids import id_new
from ..models import Message, MessageType, Queue, QueueKind, QueueUsage
from .room import queue_reserve, queues_woken

COA, COD, EXPIRY, EXCEPTION = "coa", "cod", "expiry", "exception"


def _local_queue(broker_name: str, name: str) -> Queue | None:
    target = Queue.objects.select_related("broker").filter(broker__name=broker_name, name=name).first()
    if target is not None and target.kind == QueueKind.ALIAS:
        target = Queue.objects.select_related("broker").filter(broker=target.broker, name=target.target_queue).first()
    return target if target is not None and target.kind == QueueKind.LOCAL else None


def _report_destination(*, original: Message, broker_name: str) -> tuple[Queue | None, dict | None]:
    """The reply-to queue on this broker; for another broker, the transmission queue named
    after it (so the report travels over the channel as any message would), else that
    broker's queue directly if it is on this platform."""
    to_broker = original.reply_to_broker or broker_name
    if to_broker == broker_name:
        return _local_queue(broker_name, original.reply_to_queue), None
    xmitq = Queue.objects.select_related("broker").filter(
        broker__name=broker_name, name=to_broker, usage=QueueUsage.TRANSMISSION, kind=QueueKind.LOCAL,
    ).first()
    if xmitq is not None:
        return xmitq, {"broker": to_broker, "queue": original.reply_to_queue}
    return _local_queue(to_broker, original.reply_to_queue), None


def report_send(*, original: Message, broker_name: str, queue_name: str, feedback: str, reason: str = "") -> Message | None:
    """Put a ``feedback`` report about ``original`` (which was on ``broker_name``/``queue_name``)
    if it asked for one. Returns the report, or None if none was asked for or it had nowhere to go."""
    if feedback not in (original.report or []) or not original.reply_to_queue:
        return None

    target, header = _report_destination(original=original, broker_name=broker_name)
    now = timezone.now()
    if target is None:
        journal_record(events=[journal_event(
            JournalKind.DEAD_LETTER, broker=broker_name, queue=queue_name, msg_id=original.msg_id, at=now,
            reason=f"{feedback} report undeliverable: no queue {original.reply_to_queue!r}",
        )])
        return None
    base = queue_reserve(queue=target, count=1, commit_count=1, enforce_max_depth=False)
    report = Message.objects.create(
        queue=target, msg_id=id_new(), correl_id=original.msg_id, msg_type=MessageType.REPORT, feedback=feedback,
        priority=original.priority or 0, persistent=getattr(original, "persistent", True), put_time=now, put_application="baton",
        properties={"original_broker": broker_name, "original_queue": queue_name, **({"reason": reason} if reason else {})},
        body=b"", commit_seq=base, transmission_header=header,
    )
    journal_record(events=[journal_event(
        JournalKind.PUT, broker=target.broker.name, queue=target.name, msg_id=report.msg_id, at=now,
        report=feedback, about=original.msg_id,
    )])
    queues_woken([target.pk])
    return report


def reports_send(*, originals: list[Message], feedback: str, reason: str = "") -> None:
    """``report_send`` for messages whose ``queue`` (with its broker) is loaded."""
    for original in originals:
        if feedback in (original.report or []):
            report_send(original=original, broker_name=original.queue.broker.name, queue_name=original.queue.name,
                        feedback=feedback, reason=reason)

"""The receiving end of a channel (docs/design.md §6, step 3 and the resolution calls).

A batch arrives as a list of messages with their destination queues. The receiver begins
T_r on the target broker, puts each message on its destination queue (unknown queue, put
inhibited, too long or full → the dead-letter queue with the reason), and links T_r to a
*stand-in* S for the sender's unit of work: S → T_r, and T_r asks to commit at once, so it
is held on S. Applications on the target broker can pre-emptively get the messages at
once. When the sender says commit, S commits and releases T_r in the same database
transaction; when it says back out, S rolls back and the rollback cascades to T_r and to
every application that consumed from it.

Several batches of a channel may be held at once (the sender's window), each with its own
T_r and stand-in; each commits when the sender says so, a later one before an earlier one
that still waits on its upstream (the sender settles whichever is ready: a held batch never
stalls the ones behind it). The receipt row records ``last_committed_seq``, below which
every batch received has been settled, and a ``ReceivedBatch`` row each batch above it
(pending, or committed ahead of an earlier pending one: its stand-in says which), so a
batch sent twice is recognised (exactly once). Every call is idempotent.

A batch is put with a few statements whatever its size (``_batch_put``): the receive is on
the critical path of every pipeline through a channel, since its messages are invisible,
even to pre-emptive gets, until its database transaction commits.
"""

from __future__ import annotations

import base64
from datetime import datetime
from typing import NamedTuple

from django.db import transaction as db
from django.utils import timezone

from transactions.journal import journal_event, journal_record
from transactions.locks import link_graph_lock
from transactions.manager import (
    transaction_begin,
    transaction_commit,
    transaction_links_add,
    transaction_rollback,
)
from transactions.models import JournalKind, Transaction, TransactionState
from transactions.queries import transaction_row

from baton_client.errors import InvalidInput, PutInhibited, QueueFull
from ..models import ChannelReceipt, Message, Queue, ReceivedBatch
from ..definitions import definitions_checked
from ..exceptions import QueueNotFound
from ..queries import messages_insert, received_batches
from ..selectors import broker_get
from ..services.messages.common import queue_put_target
from ..services.store import queue_reserve, queues_woken

#: What a status call can answer about batch n.
COMMITTED, PENDING, BACKED_OUT, UNKNOWN = "committed", "pending", "backed_out", "unknown"

MESSAGE_KEYS = {
    "msg_id",
    "correl_id",
    "group_id",
    "msg_type",
    "priority",
    "persistent",
    "expires_at",
    "format",
    "reply_to_queue",
    "reply_to_broker",
    "report",
    "properties",
    "put_time",
    "put_application",
    "feedback",
    "body_base64",
    "destination",
}


def batch_message_render(m: Message) -> dict:
    """A message as it travels in a batch: its descriptor (msg_id kept), body, destination."""
    return {
        "msg_id": m.msg_id,
        "correl_id": m.correl_id,
        "group_id": m.group_id,
        "msg_type": m.msg_type,
        "priority": m.priority,
        "persistent": m.persistent,
        "expires_at": m.expires_at.isoformat() if m.expires_at else None,
        "format": m.format,
        "reply_to_queue": m.reply_to_queue,
        "reply_to_broker": m.reply_to_broker,
        "report": m.report,
        "properties": m.properties,
        "put_time": m.put_time.isoformat(),
        "put_application": m.put_application,
        "feedback": m.feedback,
        "body_base64": base64.b64encode(bytes(m.body)).decode("ascii"),
        "destination": m.transmission_header or {},
    }


def _receipt(channel: str, source_broker: str, target_broker: str) -> ChannelReceipt:
    receipt, _ = ChannelReceipt.objects.select_for_update().get_or_create(
        channel_name=channel,
        source_broker=source_broker,
        defaults={"target_broker": target_broker},
    )
    return receipt


class _Held(NamedTuple):
    """A batch the receiving end holds: its ``ReceivedBatch`` row and its stand-in's state."""

    pk: int
    seq: int
    standin: str
    standin_state: str | None


def _pending(receipt: ChannelReceipt, seq: int) -> _Held | None:
    rows = received_batches(receipt_id=receipt.pk, seq=seq)
    return _Held(*rows[0]) if rows else None


def _status(receipt: ChannelReceipt, seq: int, held: _Held | None = None) -> str:
    held = held or _pending(receipt, seq)
    if held is None:
        return COMMITTED if seq <= receipt.last_committed_seq else UNKNOWN
    return _standin_status(held.standin_state)


def _standin_status(state: str | None) -> str:
    """A held batch's status from its stand-in's state (None: the stand-in has no row)."""
    if state == TransactionState.COMMITTED:
        return COMMITTED
    if state in (TransactionState.ROLLED_BACK, None):
        return BACKED_OUT
    return PENDING


def _destination(broker, name: str) -> tuple[Queue | None, dict | None, str, int]:
    """The local queue a message for ``name`` lands on, a transmission header if it travels
    on, and a reason if it must be dead-lettered instead (the put's own resolution,
    ``queue_put_target``: an alias or a remote queue whose puts are disabled refuses a channel
    as it refuses a put); and the longest message it takes."""
    try:
        target = queue_put_target(broker=broker.name, queue=name)
    except QueueNotFound:
        return None, None, f"unknown destination queue {name!r} on broker {broker.name!r}", 0
    except (PutInhibited, InvalidInput) as exc:
        return None, None, exc.message, 0
    limit = min(target.named.max_message_length, target.queue.max_message_length, broker.max_message_length)
    return target.queue, target.header, "", limit


def _dead_letter_queue(broker) -> Queue:
    return Queue.objects.select_related("broker").get(broker=broker, name=broker.dead_letter_queue)


def _message(item: dict, body: bytes, txn: Transaction) -> Message:
    """The message a batch item becomes (not saved; its queue is decided afterwards)."""
    return Message(
        msg_id=item["msg_id"],
        correl_id=item.get("correl_id"),
        group_id=item.get("group_id"),
        msg_type=item.get("msg_type") or "datagram",
        priority=item.get("priority") or 0,
        persistent=bool(item.get("persistent", True)),
        expires_at=datetime.fromisoformat(item["expires_at"]) if item.get("expires_at") else None,
        format=item.get("format") or "",
        reply_to_queue=item.get("reply_to_queue") or "",
        reply_to_broker=item.get("reply_to_broker") or "",
        report=item.get("report") or [],
        properties=item.get("properties") or {},
        put_time=datetime.fromisoformat(item["put_time"]),
        put_application=item.get("put_application") or "",
        feedback=item.get("feedback") or "",
        body=body,
        put_transaction=txn,
    )


class _Planned:
    """One message of a batch on its way: where it goes, and why if it is dead-lettered."""

    __slots__ = ("message", "name", "queue", "header", "reason", "duplicate")

    def __init__(self, message: Message, name: str, queue: Queue | None, header: dict | None, reason: str) -> None:
        self.message, self.name, self.queue, self.header, self.reason = message, name, queue, header, reason
        self.duplicate = False

    def dead_letter(self, reason: str) -> None:
        self.queue, self.header, self.reason = None, None, reason


def _planned(broker, items: list[dict], txn: Transaction) -> list[_Planned]:
    """Each item's destination (looked up once per destination name) and length check."""
    definitions_checked()
    destinations: dict[str, tuple[Queue | None, dict | None, str, int]] = {}
    planned = []
    for index, item in enumerate(items):
        try:
            body = base64.b64decode(item["body_base64"])
            name = (item.get("destination") or {}).get("queue") or ""
            if name not in destinations:
                destinations[name] = _destination(broker, name)
            queue, header, reason, limit = destinations[name]
            entry = _Planned(_message(item, body, txn), name, queue, header, reason)
        except (ValueError, TypeError, AttributeError, KeyError) as exc:  # undone with the whole batch
            raise InvalidInput("The batch is not valid.", errors={f"messages[{index}]": [str(exc)[:200]]}) from exc
        if entry.queue is not None and len(body) > limit:
            entry.dead_letter(f"message longer than queue {entry.queue.name!r} accepts")
        planned.append(entry)
    return planned


def _duplicates_marked(queue: Queue, entries: list[_Planned]) -> list[_Planned]:
    """Mark the entries whose msg_id is already on ``queue`` (delivered before: a batch cannot
    commit twice, this is a second guard) or earlier in this batch; return the others."""
    seen = set(
        Message.objects.filter(queue=queue, msg_id__in=[e.message.msg_id for e in entries]).values_list(
            "msg_id", flat=True
        )
    )
    fresh = []
    for entry in entries:
        if entry.message.msg_id in seen:
            entry.duplicate = True
        else:
            seen.add(entry.message.msg_id)
            fresh.append(entry)
    return fresh


def _reserved(queue: Queue, entries: list[_Planned]) -> None:
    """Room on ``queue`` for its entries: all at once, or — when it is too full for all —
    one by one, in order, the ones that do not fit going to the dead-letter queue."""
    try:
        queue_reserve(queue=queue, count=len(entries), commit_count=0)
        return
    except QueueFull:
        pass
    for entry in entries:
        try:
            queue_reserve(queue=queue, count=1, commit_count=0)
        except QueueFull:
            entry.dead_letter(f"queue {entry.name!r} is full")


def _batch_put(*, broker, items: list[dict], txn: Transaction, now: datetime) -> list[str]:
    """Put a batch's messages under ``txn``: what happens to each is decided per message (in
    order), the database work per batch — one look-up per destination, one duplicate check
    and one reservation per queue, one insert (the put's own statement,
    ``queries.messages_insert``), one journal write. (A statement or two per
    message made a batch of 100 cost about a second on a loaded machine, on the critical
    path of every pipeline through a channel.) Returns each message's outcome: put,
    dead_lettered or duplicate."""
    planned = _planned(broker, items, txn)
    by_queue: dict[int, tuple[Queue, list[_Planned]]] = {}
    for entry in planned:
        if entry.queue is not None:
            by_queue.setdefault(entry.queue.pk, (entry.queue, []))[1].append(entry)
    for queue, entries in by_queue.values():
        _reserved(queue, _duplicates_marked(queue, entries))
    dead = [e for e in planned if e.queue is None and not e.duplicate]
    if dead:
        dlq = _dead_letter_queue(broker)
        dead = _duplicates_marked(dlq, dead)
        if dead:
            queue_reserve(queue=dlq, count=len(dead), commit_count=0, enforce_max_depth=False)
        for entry in dead:
            entry.queue = dlq
    stored = [e for e in planned if not e.duplicate]
    for entry in stored:
        entry.message.queue = entry.queue
        entry.message.transmission_header = entry.header
        entry.message.dead_letter_reason = entry.reason
        entry.message.dead_letter_queue = entry.name if entry.reason else ""
    if stored:
        messages_insert(messages=[e.message for e in stored])
    journal_record(
        events=[
            journal_event(
                JournalKind.TRANSFER,
                broker=broker.name,
                queue=e.queue.name,
                msg_id=e.message.msg_id,
                transaction_id=txn.id,
                at=now,
                **({"dead_letter": e.reason} if e.reason else {}),
            )
            for e in stored
        ]
    )
    queues_woken({e.queue.pk for e in stored})
    return ["duplicate" if e.duplicate else "dead_lettered" if e.reason else "put" for e in planned]


def _batch_checked(payload: dict) -> None:
    problems = {}
    for key, kind in (
        ("channel", str),
        ("source_broker", str),
        ("target_broker", str),
        ("seq", int),
        ("messages", list),
    ):
        if not isinstance(payload.get(key), kind) or isinstance(payload.get(key), bool):
            problems[key] = [f"Required ({kind.__name__})."]
    if not problems:
        for index, item in enumerate(payload["messages"]):
            if not isinstance(item, dict) or not {"msg_id", "body_base64", "put_time"} <= set(item):
                problems[f"messages[{index}]"] = ["A message needs msg_id, body_base64 and put_time."]
    if problems:
        raise InvalidInput("The batch is not valid.", errors=problems)


def receiver_batch_receive(*, payload: dict) -> dict:
    """Take batch ``seq`` of a channel: put its messages under T_r held on a stand-in for the
    sender's unit of work. A batch already committed or already pending is not put again."""
    _batch_checked(payload)
    broker = broker_get(name=payload["target_broker"])
    seq = payload["seq"]
    now = timezone.now()
    with db.atomic():
        link_graph_lock(exclusive=True)
        receipt = _receipt(payload["channel"], payload["source_broker"], broker.name)
        status = _status(receipt, seq)
        if status in (COMMITTED, PENDING):
            return {"state": "received" if status == PENDING else COMMITTED, "seq": seq}
        ReceivedBatch.objects.filter(receipt=receipt, seq=seq).delete()  # backed out earlier: take it afresh
        standin = transaction_begin(broker=broker.name, timeout_ms=0, owner=f"channel:{payload['channel']}:standin")
        txn = transaction_begin(broker=broker.name, timeout_ms=0, owner=f"channel:{payload['channel']}:receiver")
        outcomes = _batch_put(broker=broker, items=payload["messages"], txn=txn, now=now)
        txn_row = transaction_row(transaction_id=txn.id, lock=True)
        transaction_links_add(
            downstream=txn_row,
            upstream_refs=[
                (standin.id, f"batch:{payload['channel']}:{seq}"),
            ],
        )
        ReceivedBatch.objects.create(receipt=receipt, seq=seq, transaction=txn.id, standin=standin.id)
        transaction_commit(transaction_id=txn.id)  # held on the stand-in until the sender says commit
    return {
        "state": "received",
        "seq": seq,
        "dead_lettered": outcomes.count("dead_lettered"),
        "duplicates": outcomes.count("duplicate"),
    }


def receiver_batch_commit(*, channel: str, source_broker: str, seq: int, through: int | None = None) -> dict:
    """Commit batch ``seq`` — and with ``through``, every batch after it up to ``through``,
    in order, in the same database transaction (a sender whose oldest batches all became
    ready at once settles them in one call): each stand-in commits, releasing its T_r (and
    what was held on it). Stops at the first batch that cannot commit (backed out, or not
    received); the answer says batch ``seq``'s state and the last batch committed."""
    last = max(seq, through if through is not None else seq)
    with db.atomic():
        receipt = (
            ChannelReceipt.objects.select_for_update().filter(channel_name=channel, source_broker=source_broker).first()
        )
        if receipt is None:
            return {"state": UNKNOWN, "seq": seq}
        first_state, committed_through = None, None
        for n in range(seq, last + 1):
            status = _batch_committed(receipt, n)
            first_state = first_state or status
            if status != COMMITTED:
                break
            committed_through = n
        _receipt_advanced(receipt)
    answer = {"state": first_state, "seq": seq}
    if through is not None:
        answer["committed_through"] = committed_through
    return answer


def _batch_committed(receipt: ChannelReceipt, seq: int) -> str:
    """Commit batch ``seq`` if it is pending, whether or not batches ahead of it still are;
    its state. Its row stays until ``_receipt_advanced`` passes it."""
    held = _pending(receipt, seq)
    status = _status(receipt, seq, held)
    if status == PENDING:
        transaction_commit(transaction_id=held.standin)
        status = COMMITTED
    return status


def _receipt_advanced(receipt: ChannelReceipt) -> None:
    """Move ``last_committed_seq`` up to just below the oldest batch still pending (or to the
    newest committed if none is), dropping the rows of the committed batches it passes: their
    status is then read from it. A seq it passes without a row was backed out (its row went
    then) or never sent; the sender asks about such a batch only after a crash, and a
    restarted sender asks about every batch it recorded before it commits any (a commit is
    what moves this), so none is ever answered committed that was not. Caller holds the
    receipt's row."""
    passed, through = [], receipt.last_committed_seq
    for pk, seq, _, state in received_batches(receipt_id=receipt.pk):
        if _standin_status(state) != COMMITTED:
            break
        passed.append(pk)
        through = max(through, seq)
    if passed:
        ReceivedBatch.objects.filter(pk__in=passed).delete()
    if through > receipt.last_committed_seq:
        ChannelReceipt.objects.filter(pk=receipt.pk).update(last_committed_seq=through)
        receipt.last_committed_seq = through


def receiver_batch_backout(*, channel: str, source_broker: str, seq: int) -> dict:
    """Back out batch ``seq``: the stand-in rolls back, cascading to T_r and to every
    application that pre-emptively consumed its messages."""
    cascaded: list[str] = []
    with db.atomic():
        receipt = (
            ChannelReceipt.objects.select_for_update().filter(channel_name=channel, source_broker=source_broker).first()
        )
        if receipt is None:
            return {"state": UNKNOWN, "seq": seq}
        held = _pending(receipt, seq)
        status = _status(receipt, seq, held)
        if status == PENDING:
            outcome = transaction_rollback(
                transaction_id=held.standin,
                reason=f"channel {channel} batch {seq} backed out",
                require_open=False,
            )
            cascaded = outcome.cascaded
            status = BACKED_OUT
        if status == BACKED_OUT and held is not None:
            ReceivedBatch.objects.filter(pk=held.pk).delete()
    return {"state": status, "seq": seq, "cascaded": cascaded}


def receiver_batch_status(*, channel: str, source_broker: str, seq: int) -> dict:
    receipt = ChannelReceipt.objects.filter(channel_name=channel, source_broker=source_broker).first()
    return {"state": UNKNOWN if receipt is None else _status(receipt, seq), "seq": seq}

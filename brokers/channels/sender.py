"""The sending end of a channel: the agent that runs on the Celery worker fleet.

A window of provisional batches (docs/design.md §6): the agent keeps up to ``window`` batches in
flight, each with its own number, its own unit of work T_s on the source broker and its own
stand-in on the target. For each batch:

1. begin T_s (no timeout: only the agent resolves it) and get up to ``batch_size`` messages
   and ``batch_bytes`` bytes of bodies from the transmission queue, waiting at most
   ``batch_interval_ms`` after the first — pre-emptively if the channel allows it, and then
   for a share of the interval as large as the share of the window in use (``_gather_wait_s``:
   with nothing in flight, the batch goes at once: the messages of an uncommitted upstream
   stream to the target as they are put instead of waiting there for the rest of the batch),
   and no longer once the upstreams of what it gathered have committed and nothing more is
   on its way (``_nothing_more_coming``);
2. record batch n (a ``ChannelBatch`` row: its number and T_s);
3. send batch n (flagged provisional while T_s waits on an uncommitted upstream) at once,
   whatever the batches ahead of it are waiting for;
4. when T_s's ready-check answers: *ready* → the receiver commits n, then T_s commits;
   *backed out* → the receiver backs n out (the rollback cascades there) and T_s rolls
   back. Batches resolve in ``seq`` order as far as they are ready together; a batch held
   on its upstream does not hold up a later one that is ready (that one settles, and its
   place in the window is free for the next).

After a crash at any point the next agent asks the receiver about each recorded batch, in
order, and commits, backs out, resends or keeps waiting on it — every message arrives
exactly once. At most one agent runs a channel: it holds a lease on the channel row,
renewed after a step at most once a second.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from datetime import timedelta

from django.conf import settings
from django.db import transaction as db
from django.db.models import F, Q
from django.utils import timezone

from baton_client.errors import TransactionBackedOut
from transactions.manager import transaction_begin, transaction_check, transaction_commit, transaction_rollback
from transactions.models import OPEN_STATES, Transaction
from transactions.queries import ready_checks
from transactions.wakeups import wait_for

from ..models import (
    Channel,
    ChannelBatch,
    ChannelBatchState,
    ChannelState,
    DeliverySequence,
    Message,
    Queue,
)
from ..queries import messages_sendable_lengths, messages_upstream_pending
from ..services.messages import message_get
from ..services.room import queue_wait_keys
from .definitions import channel_get
from .rate import rate_added
from .receiver import BACKED_OUT, COMMITTED, PENDING, batch_message_render
from .transports import Transport, TransportError, transport_for

IDLE_WAIT_S = 1.0
#: The agent renews its lease (BATON_CHANNEL_LEASE_S) after a step at most this often.
LEASE_RENEW_S = 1.0
BACKOFF_MAX_S = 60
#: Set when this worker process begins its warm shutdown (brokers/channels/tasks.py): every
#: agent in it ends its run after the step under way, as at the end of ``max_seconds``, and
#: releases its lease. The worker then stops at once instead of waiting out the runs (or
#: being killed after its grace period, its leases left to lapse), and another worker's agent
#: takes each channel over at its supervisor's next round.
AGENTS_STOP = threading.Event()

#: Where a test may have the agent kill itself (SIGKILL), to prove exactly-once recovery.
#: ``STEP`` kills at the first batch reaching it; ``STEP@N`` at batch N (the ones before it
#: stay in flight, so a window of batches is in doubt).
CRASH_POINTS = ("after_get", "after_record", "after_send", "after_receiver_commit", "after_sender_commit")


def _crash_point(name: str, crash_at: str | None, seq: int) -> None:
    if crash_at and crash_at.partition("@")[0] == name:
        at = crash_at.partition("@")[2]
        if not at or int(at) == seq:
            os.kill(os.getpid(), signal.SIGKILL)


def channel_lease_acquire(*, name: str, holder: str) -> bool:
    """Take (or renew) the channel's lease: a conditional UPDATE, so two agents can never
    both hold it."""
    now = timezone.now()
    return bool(
        Channel.objects.filter(name=name)
        .filter(Q(lease_holder="") | Q(lease_holder=holder) | Q(lease_until__isnull=True) | Q(lease_until__lte=now))
        .update(lease_holder=holder, lease_until=now + timedelta(seconds=settings.BATON_CHANNEL_LEASE_S))
    )


def channel_lease_release(*, name: str, holder: str) -> None:
    Channel.objects.filter(name=name, lease_holder=holder).update(lease_holder="", lease_until=None)


def _set(channel: Channel, **changes) -> None:
    Channel.objects.filter(pk=channel.pk).update(updated_at=timezone.now(), **changes)
    for key, value in changes.items():
        setattr(channel, key, value)


def _in_flight(channel: Channel) -> list[ChannelBatch]:
    return list(ChannelBatch.objects.filter(channel=channel).order_by("seq"))


def _xmitq_has(channel: Channel, queue: Queue) -> bool:
    """Whether the transmission queue has something this channel may send."""
    return bool(_next_lengths(channel, queue, 1))


def _next_lengths(channel: Channel, queue: Queue, limit: int) -> list[int]:
    """Body lengths of the next ``limit`` messages the channel may get, in delivery order
    (priority, then put order). Hand-written SQL (brokers/queries.py): an agent asks at
    every wake-up, hundreds of times a second on a busy pre-emptive channel, and a queryset
    cost it about a millisecond of Python each time."""
    return messages_sendable_lengths(
        queue_id=queue.pk,
        preemptive=channel.preemptive,
        limit=limit,
        priority_first=queue.delivery_sequence == DeliverySequence.PRIORITY,
    )


def _fitting(lengths: list[int], *, size: int, limit: int, first: bool) -> int:
    """How many of ``lengths`` fit in a batch holding ``size`` bytes (a batch takes at least
    one message)."""
    fits, total = 0, size
    for length in lengths:
        if (fits or not first) and total + length > limit:
            break
        fits, total = fits + 1, total + length
    return fits


def _gather_wait_s(channel: Channel, in_flight: int) -> float:
    """How long a gather waits after its first message for the rest of its batch: the batch
    interval; on a pre-emptive channel with a window of several batches, the share of it that
    the batches in flight take of the window's other places (none in flight: the batch goes at
    once; the last free place: the whole interval). A provisional batch waits at the target
    for its upstream's commit anyway: the first messages of an uncommitted unit of work reach
    the target while the rest are still being put (the pre-emptive gets there take them), and
    as the window fills, batches grow again (fewer, larger; never more than ``window`` in
    flight). A trickle of committed messages is self-clocked the same way: while a batch is
    in flight the next one gathers."""
    interval = channel.batch_interval_ms / 1000
    if not channel.preemptive or channel.window <= 1:
        return interval
    return interval * min(1.0, in_flight / (channel.window - 1))


def _nothing_more_coming(queue: Queue, messages: list[Message]) -> bool:
    """(A pre-emptive gather.) Whether every unit of work that put a gathered message has
    committed and no open unit of work has a put on the queue that is not gotten yet: no
    message is on its way, and waiting longer would only hold up the batch (the last of an
    upstream's messages go as soon as it commits, not a gather's interval later). An
    upstream rolled back is not: its rollback cascaded to the batch's unit of work, which the
    gather's next get finds."""
    units = sorted({m.put_transaction_id for m in messages if m.put_transaction_id})
    return not messages_upstream_pending(queue_id=queue.pk, transaction_ids=units)


def _batch_gather(channel: Channel, queue: Queue, txn_id: str, *, in_flight: int) -> list[Message]:
    """Up to batch_size messages and batch_bytes bytes of bodies (at least one message):
    what is there, then — rather than a get per message as they trickle in — wait (reading
    only) until the rest of the batch is there or ``_gather_wait_s`` has passed since the
    first, and get it in one go. Each get asks for as many of the next messages as fit."""
    messages: list[Message] = []
    size, deadline = 0, 0.0
    while True:
        lengths = _next_lengths(channel, queue, channel.batch_size - len(messages))
        fits = _fitting(lengths, size=size, limit=channel.batch_bytes, first=not messages)
        if fits:
            got = message_get(
                broker=channel.source_broker.name,
                queue=queue.name,
                transaction_id=txn_id,
                preemptive=channel.preemptive,
                batch=fits,
            )
            messages.extend(got.messages)
            size += sum(len(bytes(m.body)) for m in got.messages)
        if not messages:
            return messages
        if not deadline:
            deadline = time.monotonic() + _gather_wait_s(channel, in_flight)
        remaining = deadline - time.monotonic()
        if len(messages) >= channel.batch_size or fits < len(lengths) or remaining <= 0:
            return messages  # full (by count or by bytes), or due
        if channel.preemptive and not lengths and _nothing_more_coming(queue, messages):
            return messages  # the upstreams have committed: nothing more is on its way
        want = channel.batch_size - len(messages)

        def rest_there(want: int = want, size: int = size) -> bool:
            more = _next_lengths(channel, queue, want)
            if len(more) >= want or _fitting(more, size=size, limit=channel.batch_bytes, first=False) < len(more):
                return True
            return channel.preemptive and _nothing_more_coming(queue, messages)  # take what is there, and go

        wait_for(rest_there, keys=queue_wait_keys(queue.pk, preemptive=channel.preemptive), wait_s=remaining)


def _payload(channel: Channel, seq: int, messages: list[Message], provisional: bool) -> dict:
    return {
        "channel": channel.name,
        "source_broker": channel.source_broker.name,
        "target_broker": channel.target_broker,
        "seq": seq,
        "provisional": provisional,
        "messages": [batch_message_render(m) for m in messages],
    }


def _batch_send(
    channel: Channel, transport: Transport, batch: ChannelBatch, messages: list[Message], crash_at: str | None
) -> None:
    provisional = transaction_check(transaction_id=batch.transaction).result == "pending"
    transport.receive(_payload(channel, batch.seq, messages, provisional))
    now = timezone.now()
    ChannelBatch.objects.filter(pk=batch.pk).update(state=ChannelBatchState.SENT, sent_at=now)
    batch.state, batch.sent_at = ChannelBatchState.SENT, now
    _crash_point("after_send", crash_at, batch.seq)


def _backed_out_first(channel: Channel, transport: Transport, crash_at: str | None) -> None:
    """Back out at the receiver every batch in flight whose T_s has rolled back (an upstream's
    rollback cascaded to it): its messages are back on the transmission queue, and a batch
    gathered after that rollback may hold them again; the receiver must not still hold the
    earlier copy when it arrives (it would take them for duplicates and drop them)."""
    batches = _in_flight(channel)
    if not batches:
        return
    checked = ready_checks(transaction_ids=[b.transaction for b in batches])
    for batch in batches:
        result = checked.get(batch.transaction) or transaction_check(transaction_id=batch.transaction).result
        if result == "backed_out":
            _batch_settle(channel, transport, batch, result, crash_at)


def _batch_new(
    channel: Channel, queue: Queue, transport: Transport, crash_at: str | None, *, in_flight: int = 0
) -> bool:
    """Gather, record and send the next batch (``in_flight``: the batches in the window
    already); False when there was nothing to get after all."""
    txn = transaction_begin(broker=channel.source_broker.name, timeout_ms=0, owner=f"channel:{channel.name}")
    try:
        messages = _batch_gather(channel, queue, txn.id, in_flight=in_flight)
    except TransactionBackedOut:
        # an upstream's rollback cascaded to the batch's unit of work while it gathered
        # (pre-emptive): what it had taken is back on the transmission queue, for the next batch
        return False
    if not messages:
        transaction_rollback(transaction_id=txn.id, reason="channel idle", require_open=False)
        return False
    # Read after the gather: a message it took again was freed by a T_s rollback that this sees.
    _backed_out_first(channel, transport, crash_at)
    seq = channel.last_batch_seq + 1
    _crash_point("after_get", crash_at, seq)
    with db.atomic():
        batch = ChannelBatch.objects.create(
            channel=channel,
            seq=seq,
            transaction=txn.id,
            messages=len(messages),
            bytes=sum(len(bytes(m.body)) for m in messages),
        )
        _set(channel, last_batch_seq=seq)
    _crash_point("after_record", crash_at, seq)
    _batch_send(channel, transport, batch, messages, crash_at)
    return True


def _batch_finish(channel: Channel, batch: ChannelBatch, status: str, crash_at: str | None) -> str:
    """T_s commits (the receiver committed) or rolls back; the batch leaves the window."""
    _batches_finish(channel, [batch], status, crash_at)
    return "committed" if status == COMMITTED else "backed_out"


def _batches_finish(channel: Channel, batches: list[ChannelBatch], status: str, crash_at: str | None) -> None:
    """The T_s of each of ``batches`` (consecutive, oldest first) commits (the receiver
    committed them) or rolls back; they leave the window, in one database transaction."""
    with db.atomic():  # the T_s outcomes, the counters and the batches' records change together
        if status == COMMITTED:
            open_ids = set(
                Transaction.objects.filter(pk__in=[b.transaction for b in batches], state__in=OPEN_STATES).values_list(
                    "pk", flat=True
                )
            )
            for batch in batches:
                if batch.transaction in open_ids:
                    transaction_commit(transaction_id=batch.transaction)
            count, size = sum(b.messages for b in batches), sum(b.bytes for b in batches)
            now = timezone.now()
            rate = Channel.objects.filter(pk=channel.pk).values("rate_messages", "rate_bytes", "rate_at").get()
            counters = {
                "batches_committed": F("batches_committed") + len(batches),
                "messages_sent": F("messages_sent") + count,
                "bytes_sent": F("bytes_sent") + size,
                "rate_at": now,
                "rate_messages": rate_added(rate=rate["rate_messages"], at=rate["rate_at"], now=now, count=count),
                "rate_bytes": rate_added(rate=rate["rate_bytes"], at=rate["rate_at"], now=now, count=size),
            }
        else:
            for batch in batches:
                transaction_rollback(
                    transaction_id=batch.transaction,
                    reason=f"channel {channel.name} batch {batch.seq} backed out",
                    require_open=False,
                )
            counters = {"batches_backed_out": F("batches_backed_out") + len(batches)}
        ChannelBatch.objects.filter(pk__in=[b.pk for b in batches]).delete()
        Channel.objects.filter(pk=channel.pk).update(updated_at=timezone.now(), **counters)
    for batch in batches:
        _crash_point("after_sender_commit", crash_at, batch.seq)


def _batch_settle(
    channel: Channel, transport: Transport, batch: ChannelBatch, result: str, crash_at: str | None
) -> str:
    """The oldest batch's ready-check answered ``result`` (ready or backed_out)."""
    if result == "ready":
        answer = transport.commit(batch.seq)["state"]
        _crash_point("after_receiver_commit", crash_at, batch.seq)
        # The receiver may have backed the batch out meanwhile (its stand-in was rolled back
        # there): then T_s rolls back and its messages are sent again later.
        status = COMMITTED if answer == COMMITTED else BACKED_OUT
    else:
        transport.backout(batch.seq)
        status = BACKED_OUT
    return _batch_finish(channel, batch, status, crash_at)


def _batches_settle(channel: Channel, transport: Transport, ready: list[ChannelBatch], crash_at: str | None) -> str:
    """The oldest batches, consecutive, whose ready-checks all answered ready (they often
    become ready together, when the upstream unit of work they all wait on commits): the
    receiver commits them in one call, then their T_s commit in one database transaction.
    A batch the receiver could not commit (backed out there meanwhile) and the ones after it
    are settled one by one."""
    if len(ready) == 1:
        return _batch_settle(channel, transport, ready[0], "ready", crash_at)
    answer = transport.commit(ready[0].seq, through=ready[-1].seq)
    through = answer.get("committed_through") or 0
    done = [b for b in ready if b.seq <= through]
    for batch in done:
        _crash_point("after_receiver_commit", crash_at, batch.seq)
    outcome = ""
    if done:
        _batches_finish(channel, done, COMMITTED, crash_at)
        outcome = "committed"
    for batch in ready[len(done) :]:
        outcome = _batch_settle(channel, transport, batch, "ready", crash_at)
    return outcome


def channel_recover(*, channel: Channel, transport: Transport, crash_at: str | None = None) -> list[str]:
    """What a starting agent does first: ask the receiver about each recorded batch, in
    order — committed → commit T_s; backed out → roll T_s back; pending → it stays in the
    window; unknown → resend the messages T_s still holds (or drop the batch if T_s is
    gone). Then units of work an agent began but never recorded give their messages back.
    Returns the outcomes of the batches it settled."""
    outcomes = []
    for batch in _in_flight(channel):
        status = transport.status(batch.seq)["state"]
        if status in (COMMITTED, BACKED_OUT):
            outcomes.append(_batch_finish(channel, batch, status, crash_at))
        elif status == PENDING:
            if batch.state != ChannelBatchState.SENT:
                ChannelBatch.objects.filter(pk=batch.pk).update(state=ChannelBatchState.SENT, sent_at=timezone.now())
        else:  # the receiver never got it
            txn_state = Transaction.objects.filter(pk=batch.transaction).values_list("state", flat=True).first()
            messages = list(Message.objects.filter(get_transaction_id=batch.transaction).order_by("id"))
            if txn_state in OPEN_STATES and messages:
                _batch_send(channel, transport, batch, messages, crash_at)
            else:  # T_s is gone (rolled back): nothing was delivered and nothing is left to send
                with db.atomic():
                    if txn_state in OPEN_STATES:
                        transaction_rollback(
                            transaction_id=batch.transaction, reason="channel batch empty", require_open=False
                        )
                    ChannelBatch.objects.filter(pk=batch.pk).delete()
                outcomes.append("dropped")
    recorded = ChannelBatch.objects.filter(channel=channel).values_list("transaction", flat=True)
    stale = Transaction.objects.filter(owner=f"channel:{channel.name}", state__in=OPEN_STATES).exclude(
        pk__in=list(recorded)
    )
    for txn_id in stale.values_list("pk", flat=True):
        transaction_rollback(transaction_id=txn_id, reason="channel agent restarted", require_open=False)
    return outcomes


def _settled_in_turn(
    channel: Channel, transport: Transport, batches: list[ChannelBatch], results: list[str], crash_at: str | None
) -> str:
    """Settle every batch whose ready-check answered, oldest first: each run of consecutive
    ready batches in one receiver call (``_batches_settle``), a backed-out one by itself.
    Batches still pending stay in the window, however many settle behind them. Returns the
    last outcome, or "" if none answered."""
    outcome, run = "", []
    for batch, result in zip(batches, results):
        if result == "ready":
            run.append(batch)
            continue
        if run:
            outcome = _batches_settle(channel, transport, run, crash_at)
            run = []
        if result != "pending":  # backed out
            outcome = _batch_settle(channel, transport, batch, result, crash_at)
    if run:
        outcome = _batches_settle(channel, transport, run, crash_at)
    return outcome


def channel_batch_cycle(
    *, channel: Channel, transport: Transport, send: bool = True, crash_at: str | None = None
) -> str:
    """One step of the agent: settle the batches whose ready-check has answered (a held one
    does not stop a ready one behind it); else send a new batch if the window has room (and
    ``send``); else wait up to IDLE_WAIT_S for either. Returns committed or backed_out (the
    last batch settled), sent, waiting (batches in flight, none settled) or idle."""
    batches = _in_flight(channel)
    checked = ready_checks(transaction_ids=[b.transaction for b in batches])
    results = [checked.get(b.transaction) or transaction_check(transaction_id=b.transaction).result for b in batches]
    outcome = _settled_in_turn(channel, transport, batches, results, crash_at)
    if outcome:
        return outcome
    queue = Queue.objects.get(broker=channel.source_broker, name=channel.transmission_queue)
    room = send and len(batches) < channel.window
    if room and _xmitq_has(channel, queue) and _batch_new(channel, queue, transport, crash_at, in_flight=len(batches)):
        return "sent"
    held = [b.transaction for b in batches]

    def due() -> bool:
        return bool(
            any(r != "pending" for r in ready_checks(transaction_ids=held).values())
            or (room and _xmitq_has(channel, queue))
        )

    keys = queue_wait_keys(queue.pk, preemptive=channel.preemptive) + [f"txn:{t}" for t in held]
    wait_for(due, keys=keys, wait_s=IDLE_WAIT_S)
    return "waiting" if batches else "idle"


def channel_agent_run(
    *, name: str, holder: str, max_seconds: float = 50, once: bool = False, crash_at: str | None = None
) -> str:
    """Run the channel's agent for up to ``max_seconds`` (then the supervisor starts the next
    run), or with ``once`` until one batch has been sent and every batch in flight settled.
    Returns why it ended (or, with ``once``, the last batch's outcome)."""
    if not channel_lease_acquire(name=name, holder=holder):
        return "busy"
    channel = channel_get(name=name)
    channel.lease_holder = holder
    transport = transport_for(channel)
    ended = "time"
    settled = ""
    sent = False
    try:
        if channel.enabled:
            in_doubt = ChannelBatch.objects.filter(channel=channel).exists()
            _set(channel, state=ChannelState.IN_DOUBT if in_doubt else ChannelState.RUNNING)
        end = time.monotonic() + max_seconds
        # The lease is renewed after a step when LEASE_RENEW_S has passed since the last
        # renewal, not after every step: a renewal is a durable write, and the agent of a busy
        # pre-emptive channel steps hundreds of times a second.
        renew_at = time.monotonic() + LEASE_RENEW_S
        recovered = False
        while time.monotonic() < end:
            if AGENTS_STOP.is_set():
                ended = "shutdown"
                break
            channel.refresh_from_db()
            if not channel.enabled:
                ended = "stopped"
                break
            try:
                if not recovered:
                    outcomes = channel_recover(channel=channel, transport=transport, crash_at=crash_at)
                    settled = outcomes[-1] if outcomes else ""
                    recovered = True
                    _set(channel, state=ChannelState.RUNNING)
                    outcome = settled or "idle"
                else:
                    outcome = channel_batch_cycle(
                        channel=channel, transport=transport, send=not (once and sent), crash_at=crash_at
                    )
            except TransportError as exc:
                backoff = min(BACKOFF_MAX_S, 2 ** min(channel.retry_count, 6))
                _set(
                    channel,
                    state=ChannelState.RETRYING,
                    last_error=str(exc)[:2000],
                    retry_count=channel.retry_count + 1,
                    next_attempt_at=timezone.now() + timedelta(seconds=backoff),
                )
                ended = "retrying"
                break
            if channel.state == ChannelState.RETRYING or channel.last_error:
                _set(channel, state=ChannelState.RUNNING, last_error="", retry_count=0, next_attempt_at=None)
            if time.monotonic() >= renew_at:
                if not channel_lease_acquire(name=name, holder=holder):
                    ended = "lease_lost"  # another agent took over: stop at once
                    break
                renew_at = time.monotonic() + LEASE_RENEW_S
            sent = sent or outcome == "sent"
            if outcome in ("committed", "backed_out", "dropped"):
                settled = outcome
            if once and settled and not ChannelBatch.objects.filter(channel=channel).exists():
                ended = settled
                break
    finally:
        # One database transaction with the channel's row locked: a stop (channel_stop) either
        # committed before it, and the agent sets the state, or comes after the lease is
        # released, and the stop sets it. Read and released apart, a stop in between was lost.
        with db.atomic():
            Channel.objects.select_for_update().filter(pk=channel.pk).values_list("pk").first()
            channel.refresh_from_db()
            if not channel.enabled:
                in_doubt = ChannelBatch.objects.filter(channel=channel).exists()
                _set(channel, state=ChannelState.IN_DOUBT if in_doubt else ChannelState.STOPPED)
            channel_lease_release(name=name, holder=holder)
        transport.close()
    return ended


def channels_due() -> list[str]:
    """Channels the supervisor should (re)start an agent for: enabled, no live lease, and
    not waiting for a retry."""
    now = timezone.now()
    return list(
        Channel.objects.filter(enabled=True)
        .filter(Q(lease_holder="") | Q(lease_until__isnull=True) | Q(lease_until__lte=now))
        .filter(Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now))
        .values_list("name", flat=True)
    )

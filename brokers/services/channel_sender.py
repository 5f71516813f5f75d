"""The sending end of a channel: the agent that runs on the Celery worker fleet.

One batch (DESIGN §6):

1. begin T_s on the source broker (no timeout: only the agent resolves it) and get up to
   ``batch_size`` messages from the transmission queue within ``batch_interval_ms`` —
   pre-emptively if the channel allows it;
2. record batch n as in doubt (its number and T_s) on the channel row;
3. send batch n (flagged provisional while T_s waits on an uncommitted upstream);
4. run the ready-check on T_s: *ready* → tell the receiver to commit n, then commit T_s;
   *backed out* → tell the receiver to back out n (the rollback cascades there).

After a crash at any point the next agent finds batch n in doubt, asks the receiver, and
commits, backs out or resends it — every message arrives exactly once. At most one agent
runs a channel: it holds a lease on the channel row, renewed every batch.
"""
from __future__ import annotations

import os
import signal
import time
from datetime import timedelta

from django.conf import settings
from django.db import transaction as db
from django.db.models import F, Q
from django.utils import timezone

from transactions.manager import transaction_begin, transaction_check, transaction_commit, transaction_rollback
from transactions.models import OPEN_STATES, Transaction
from transactions.wakeups import wait_for

from ..models import Channel, ChannelState, Message
from .channel_definitions import channel_get
from .channel_receiver import BACKED_OUT, COMMITTED, PENDING, batch_message_render
from .channel_transport import Transport, TransportError, transport_for
from .messages import message_get
from .store import queue_wakeup_key

IDLE_WAIT_S = 1.0
READY_CHECK_WAIT_S = 1.0
BACKOFF_MAX_S = 60

#: Where a test may have the agent kill itself (SIGKILL), to prove exactly-once recovery.
CRASH_POINTS = ("after_get", "after_record", "after_send", "after_receiver_commit", "after_sender_commit")


def _crash_point(name: str, crash_at: str | None) -> None:
    if crash_at == name:
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


def _xmitq_ready(channel: Channel, wait_s: float) -> bool:
    """Whether the transmission queue has something to send (waiting up to ``wait_s``)."""
    source = channel.source_broker.queues.get(name=channel.transmission_queue)
    pending = Message.objects.filter(queue=source, get_transaction__isnull=True, lock_token__isnull=True)
    if not channel.preemptive:
        pending = pending.filter(put_transaction__isnull=True)
    return wait_for(lambda: pending.exists(), keys=[queue_wakeup_key(source.pk)], wait_s=wait_s)


def _batch_gather(channel: Channel, txn_id: str) -> list[Message]:
    """Up to batch_size messages, waiting at most batch_interval_ms after the first."""
    broker, queue = channel.source_broker.name, channel.transmission_queue
    messages: list[Message] = []
    deadline = time.monotonic() + channel.batch_interval_ms / 1000
    while len(messages) < channel.batch_size:
        remaining = deadline - time.monotonic()
        got = message_get(broker=broker, queue=queue, transaction_id=txn_id, preemptive=channel.preemptive,
                          batch=channel.batch_size - len(messages), wait=max(0.0, remaining) if messages else 0)
        messages.extend(got.messages)
        if not got.messages or remaining <= 0:
            break
    return messages


def _payload(channel: Channel, seq: int, messages: list[Message], provisional: bool) -> dict:
    return {
        "channel": channel.name, "source_broker": channel.source_broker.name,
        "target_broker": channel.target_broker, "seq": seq, "provisional": provisional,
        "messages": [batch_message_render(m) for m in messages],
    }


def _resolve(channel: Channel, transport: Transport, *, seq: int, txn_id: str, crash_at: str | None) -> str:
    """Drive batch ``seq`` (recorded in doubt with T_s = ``txn_id``) to its end."""
    status = transport.status(seq)["status"]
    txn_state = Transaction.objects.filter(pk=txn_id).values_list("state", flat=True).first()
    if status not in (COMMITTED, BACKED_OUT, PENDING):  # the receiver never got it
        messages = list(Message.objects.filter(get_transaction_id=txn_id).order_by("id"))
        if txn_state in OPEN_STATES and messages:
            provisional = transaction_check(transaction_id=txn_id).result == "pending"
            transport.receive(_payload(channel, seq, messages, provisional))
            _crash_point("after_send", crash_at)
            status = PENDING
        else:  # T_s is gone (rolled back): nothing was delivered and nothing is left to send
            if txn_state in OPEN_STATES:
                transaction_rollback(transaction_id=txn_id, reason="channel batch empty", require_open=False)
            _set(channel, in_doubt_seq=None, in_doubt_transaction="")
            return "dropped"
    if status == PENDING:
        while True:
            result = transaction_check(transaction_id=txn_id, wait=READY_CHECK_WAIT_S).result
            if result != "pending":
                break
            channel.refresh_from_db(fields=["enabled"])
            if not channel.enabled or not channel_lease_acquire(name=channel.name, holder=channel.lease_holder):
                return "in_doubt"  # stopped, or the lease was lost: the batch stays in doubt
        if result == "ready":
            answer = transport.commit(seq)["status"]
            _crash_point("after_receiver_commit", crash_at)
            # The receiver may have backed the batch out meanwhile (its stand-in timed out or
            # was superseded): then T_s rolls back and its messages are sent again later.
            status = COMMITTED if answer == COMMITTED else BACKED_OUT
        else:
            transport.backout(seq)
            status = BACKED_OUT
    sent = Message.objects.filter(get_transaction_id=txn_id).count()
    with db.atomic():  # T_s's outcome, the batch counters and the in-doubt record change together
        if status == COMMITTED:
            if Transaction.objects.filter(pk=txn_id, state__in=OPEN_STATES).exists():
                transaction_commit(transaction_id=txn_id)
            counters = {"batches_committed": F("batches_committed") + 1, "messages_sent": F("messages_sent") + sent}
        else:
            transaction_rollback(transaction_id=txn_id, reason=f"channel {channel.name} batch {seq} backed out",
                                 require_open=False)
            counters = {"batches_backed_out": F("batches_backed_out") + 1}
        Channel.objects.filter(pk=channel.pk).update(in_doubt_seq=None, in_doubt_transaction="", **counters)
    _crash_point("after_sender_commit", crash_at)
    channel.in_doubt_seq, channel.in_doubt_transaction = None, ""
    return "committed" if status == COMMITTED else "backed_out"


def channel_batch_cycle(*, channel: Channel, transport: Transport, crash_at: str | None = None) -> str:
    """One step of the agent: resolve a batch in doubt, or move one new batch.
    Returns idle, committed, backed_out, dropped or in_doubt."""
    if channel.in_doubt_seq:
        _set(channel, state=ChannelState.IN_DOUBT)
        outcome = _resolve(channel, transport, seq=channel.in_doubt_seq, txn_id=channel.in_doubt_transaction,
                           crash_at=crash_at)
        if outcome != "in_doubt":
            _set(channel, state=ChannelState.RUNNING, last_error="", retry_count=0)
        return outcome
    # units of work an agent began but never recorded (it died in between) give their messages back
    for stale in Transaction.objects.filter(owner=f"channel:{channel.name}", state__in=OPEN_STATES).values_list("pk", flat=True):
        transaction_rollback(transaction_id=stale, reason="channel agent restarted", require_open=False)
    if not _xmitq_ready(channel, IDLE_WAIT_S):
        return "idle"
    txn = transaction_begin(broker=channel.source_broker.name, timeout_ms=0, owner=f"channel:{channel.name}")
    messages = _batch_gather(channel, txn.id)
    if not messages:
        transaction_rollback(transaction_id=txn.id, reason="channel idle", require_open=False)
        return "idle"
    _crash_point("after_get", crash_at)
    seq = channel.last_batch_seq + 1
    _set(channel, in_doubt_seq=seq, in_doubt_transaction=txn.id, last_batch_seq=seq)
    _crash_point("after_record", crash_at)
    provisional = transaction_check(transaction_id=txn.id).result == "pending"
    transport.receive(_payload(channel, seq, messages, provisional))
    _crash_point("after_send", crash_at)
    return _resolve(channel, transport, seq=seq, txn_id=txn.id, crash_at=crash_at)


def channel_agent_run(*, name: str, holder: str, max_seconds: float = 50, once: bool = False,
                      crash_at: str | None = None) -> str:
    """Run the channel's agent for up to ``max_seconds`` (then the supervisor starts the next
    run), or for one batch with ``once``. Returns why it ended."""
    if not channel_lease_acquire(name=name, holder=holder):
        return "busy"
    channel = channel_get(name=name)
    channel.lease_holder = holder
    transport = transport_for(channel)
    ended = "time"
    try:
        if channel.enabled:
            _set(channel, state=ChannelState.IN_DOUBT if channel.in_doubt_seq else ChannelState.RUNNING)
        end = time.monotonic() + max_seconds
        while time.monotonic() < end:
            channel.refresh_from_db()
            if not channel.enabled:
                ended = "stopped"
                break
            try:
                outcome = channel_batch_cycle(channel=channel, transport=transport, crash_at=crash_at)
            except TransportError as exc:
                backoff = min(BACKOFF_MAX_S, 2 ** min(channel.retry_count, 6))
                _set(channel, state=ChannelState.RETRYING, last_error=str(exc)[:2000], retry_count=channel.retry_count + 1,
                     next_attempt_at=timezone.now() + timedelta(seconds=backoff))
                ended = "retrying"
                break
            if channel.state == ChannelState.RETRYING or channel.last_error:
                _set(channel, state=ChannelState.RUNNING, last_error="", retry_count=0, next_attempt_at=None)
            if not channel_lease_acquire(name=name, holder=holder):
                ended = "lease_lost"  # another agent took over: stop at once
                break
            if once and outcome != "idle":
                ended = outcome
                break
    finally:
        channel.refresh_from_db()
        if not channel.enabled:
            _set(channel, state=ChannelState.IN_DOUBT if channel.in_doubt_seq else ChannelState.STOPPED)
        channel_lease_release(name=name, holder=holder)
        if hasattr(transport, "close"):
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


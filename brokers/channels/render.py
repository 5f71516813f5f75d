"""What the API (and ``display_channel``) shows of a channel: its definition, its state and
counters, and its window of batches in flight."""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from ..models import Channel
from .rate import rate_decayed
from .selectors import channel_windows


def channel_render(c: Channel, window: dict | None = None) -> dict[str, Any]:
    window = window if window is not None else channel_windows(channels=[c])[c.pk]
    now = timezone.now()
    oldest = None
    if window["oldest_seq"] is not None:
        oldest = {"seq": window["oldest_seq"], "age_s": round((now - window["oldest_at"]).total_seconds(), 3)}
    return {
        "name": c.name,
        "source_broker": c.source_broker.name,
        "transmission_queue": c.transmission_queue,
        "target_broker": c.target_broker,
        "target_url": c.target_url or None,
        "target_token": "***" if c.target_token else None,
        "batch_size": c.batch_size,
        "batch_interval_ms": c.batch_interval_ms,
        "batch_bytes": c.batch_bytes,
        "window": c.window,
        "preemptive": c.preemptive,
        "description": c.description,
        "enabled": c.enabled,
        "state": c.state,
        "batches_committed": c.batches_committed,
        "batches_backed_out": c.batches_backed_out,
        "messages_sent": c.messages_sent,
        "bytes_sent": c.bytes_sent,
        "last_batch_seq": c.last_batch_seq,
        "in_doubt_seq": window["oldest_seq"],
        "batches_in_flight": window["in_flight"],
        "oldest_unconfirmed": oldest,
        "messages_per_s": round(rate_decayed(rate=c.rate_messages, at=c.rate_at, now=now), 3),
        "bytes_per_s": round(rate_decayed(rate=c.rate_bytes, at=c.rate_at, now=now), 1),
        "last_error": c.last_error or None,
        "retry_count": c.retry_count,
        "next_attempt_at": c.next_attempt_at.isoformat() if c.next_attempt_at else None,
        "agent": c.lease_holder or None,
        "updated_at": c.updated_at.isoformat(),
    }

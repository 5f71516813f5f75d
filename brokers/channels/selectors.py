"""Reads about channels: their windows of batches in flight."""

from __future__ import annotations

from ..models import ChannelBatch


def channel_windows(*, channels: list) -> dict[int, dict]:
    """Each channel's window in one query: how many batches are in flight, and the oldest
    unconfirmed one (its ``seq`` and when it was recorded)."""
    windows = {c.pk: {"in_flight": 0, "oldest_seq": None, "oldest_at": None} for c in channels}
    rows = (
        ChannelBatch.objects.filter(channel_id__in=list(windows))
        .order_by("channel_id", "seq")
        .values_list("channel_id", "seq", "created_at")
    )
    for channel_id, seq, created_at in rows:
        window = windows[channel_id]
        window["in_flight"] += 1
        if window["oldest_seq"] is None:
            window["oldest_seq"], window["oldest_at"] = seq, created_at
    return windows

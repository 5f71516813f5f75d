"""Clearing retained publications."""

from __future__ import annotations

from brokers.selectors import broker_get

from ..models import RetainedPublication


def retained_clear(*, broker: str, topic: str) -> bool:
    """Clear a topic's retained publication; True if there was one. ``topic`` is a topic
    string already (``RetainedClear.Input`` parsed it where it entered)."""
    owner = broker_get(name=broker)
    deleted, _ = RetainedPublication.objects.filter(broker=owner, topic=topic).delete()
    return bool(deleted)

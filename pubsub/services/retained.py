"""Clearing retained publications."""

from __future__ import annotations

from brokers.selectors import broker_get
from config.errors import InvalidInput

from ..models import RetainedPublication
from ..topics import topic_problems


def retained_clear(*, broker: str, topic: str) -> bool:
    """Clear a topic's retained publication; True if there was one."""
    if problems := topic_problems(topic):
        raise InvalidInput("The topic string is not valid.", errors={"topic": problems})
    owner = broker_get(name=broker)
    deleted, _ = RetainedPublication.objects.filter(broker=owner, topic=topic).delete()
    return bool(deleted)

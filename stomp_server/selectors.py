"""Reads of the STOMP app."""

from __future__ import annotations

from .models import StompClient


def stomp_clients(*, brokers: frozenset[str] | None) -> list[StompClient]:
    """The live STOMP connections on these brokers (None: on every broker)."""
    rows = StompClient.objects.all()
    if brokers is not None:
        rows = rows.filter(broker__in=brokers)
    return list(rows)

"""Reads of the STOMP app."""

from __future__ import annotations

from django.db import connection

from brokers.models import Message
from transactions.queries import dt_param

from .models import StompClient

_MESSAGE = Message._meta.db_table


def stomp_clients(*, brokers: frozenset[str] | None) -> list[StompClient]:
    """The live STOMP connections on these brokers (None: on every broker)."""
    rows = StompClient.objects.all()
    if brokers is not None:
        rows = rows.filter(broker__in=brokers)
    return list(rows)


def queue_may_have_messages(*, queue_id: int, now) -> bool:
    """Whether a get on the queue could take or settle something: a message neither gotten
    nor locked (committed or not, expired or not), or one whose peek-lock ran out by ``now``.
    False means a get would find nothing. A read through the indexes a get uses, without the
    database's write lock that a get takes even when it finds nothing."""
    with connection.cursor() as c:
        c.execute(
            f"SELECT EXISTS (SELECT 1 FROM {_MESSAGE} WHERE queue_id = %s AND get_transaction_id IS NULL"
            f" AND lock_token IS NULL) OR EXISTS (SELECT 1 FROM {_MESSAGE} WHERE lock_token IS NOT NULL"
            f" AND locked_until <= %s AND queue_id = %s AND get_transaction_id IS NULL)",
            [queue_id, dt_param(now), queue_id],
        )
        return bool(c.fetchone()[0])

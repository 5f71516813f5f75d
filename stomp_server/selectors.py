"""Reads of the STOMP app."""

from __future__ import annotations

from django.db import connection

from brokers.models import Message, Queue
from transactions.queries import dt_param

from .models import StompClient

_MESSAGE = Message._meta.db_table
_QUEUE = Queue._meta.db_table


def stomp_clients(*, brokers: frozenset[str] | None) -> list[StompClient]:
    """The live STOMP connections on these brokers (None: on every broker)."""
    rows = StompClient.objects.all()
    if brokers is not None:
        rows = rows.filter(broker__in=brokers)
    return list(rows)


def stomp_connections_elsewhere(*, username: str, process: str) -> int:
    """How many connections of ``username`` the STOMP servers other than ``process`` hold
    (their rows, kept by each process's registry: stomp_server/registry.py)."""
    return StompClient.objects.filter(username=username).exclude(process=process).count()


def queue_may_have_messages(*, queue_id: int, now) -> bool:
    """Whether a get on the queue could take or settle something: a message neither gotten
    nor locked (committed or not, expired or not), or one whose peek-lock ran out by ``now``;
    or whether the queue is gone (the get says so). False means a get would find nothing. A
    read through the indexes a get uses, without the database's write lock that a get takes
    even when it finds nothing."""
    # CASE: each look only when the one before found nothing; the second through the
    # lock-expiry index (``+queue_id`` keeps SQLite from walking the queue's messages instead)
    with connection.cursor() as c:
        c.execute(
            f"SELECT CASE WHEN EXISTS (SELECT 1 FROM {_MESSAGE} WHERE queue_id = %s"
            f" AND get_transaction_id IS NULL AND lock_token IS NULL) THEN 1"
            f" WHEN EXISTS (SELECT 1 FROM {_MESSAGE} WHERE lock_token IS NOT NULL AND locked_until <= %s"
            f" AND +queue_id = %s AND get_transaction_id IS NULL) THEN 1"
            f" WHEN EXISTS (SELECT 1 FROM {_QUEUE} WHERE id = %s) THEN 0 ELSE 1 END",
            [queue_id, dt_param(now), queue_id, queue_id],
        )
        return bool(c.fetchone()[0])

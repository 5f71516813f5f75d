"""What the API returns for brokers, queues, transactions and connections."""

from __future__ import annotations

from datetime import timezone
from typing import Any

from transactions.models import Transaction

from ..models import Broker, Queue
from ..services.connections import ConnectionView
from ..services.queues import QUEUE_FIELDS


def iso(value) -> str | None:
    return value.isoformat() if value else None


def iso_z(value) -> str | None:
    """A time in UTC as ISO 8601 with ``Z`` (``2026-11-25T19:46:02.123456Z``): how the
    publish/subscribe, ingest and analytics answers have always written their times."""
    if not value:
        return None
    text = value.astimezone(timezone.utc).isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def broker_render(b: Broker) -> dict[str, Any]:
    return {
        "name": b.name,
        "description": b.description,
        "dead_letter_queue": b.dead_letter_queue,
        "transaction_timeout_ms": b.transaction_timeout_ms,
        "max_message_length": b.max_message_length,
        "default_persistence": b.default_persistence,
        "auto_define_queues": b.auto_define_queues,
        "created_at": iso(b.created_at),
    }


def queue_render(q: Queue, depths: dict[str, int] | None = None) -> dict[str, Any]:
    data: dict[str, Any] = {"name": q.name, "broker": q.broker.name}
    data.update({name: getattr(q, name) for name in sorted(QUEUE_FIELDS)})
    data["created_at"] = iso(q.created_at)
    if depths is not None:
        data.update(depths)
    return data


def transaction_render(t: Transaction, *, upstream: list[str], downstream: list[str]) -> dict[str, Any]:
    return {
        "id": t.id,
        "broker": t.broker,
        "state": t.state,
        "reason": t.reason or None,
        "cause": t.cause_id,
        "upstream": upstream,
        "downstream": downstream,
        "created_at": iso(t.created_at),
        "deadline_at": iso(t.deadline_at),
        "commit_requested_at": iso(t.commit_requested_at),
        "resolved_at": iso(t.resolved_at),
    }


def connection_render(v: ConnectionView) -> dict[str, Any]:
    c = v.connection
    return {
        "conn_id": c.conn_id,
        "broker": c.broker.name,
        "client_name": c.client_name,
        "last_put_msg_id": v.last_put_msg_id,
        "last_got_msg_id": v.last_got_msg_id,
        "current_transaction": c.current_transaction_id,
        "created_at": iso(c.created_at),
    }

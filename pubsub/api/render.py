"""What the publish/subscribe API (and the display commands) return for topic objects,
subscriptions and retained publications."""

from __future__ import annotations

import base64
from typing import Any

from brokers.api.render import iso_z

from ..models import RetainedPublication, Subscription, Topic


def topic_render(topic: Topic) -> dict[str, Any]:
    return {
        "name": topic.name,
        "broker": topic.broker.name,
        "topic_string": topic.topic_string,
        "conflation_interval_ms": topic.conflation_interval_ms,
        "durable_subscriptions": topic.durable_subscriptions,
        "description": topic.description,
        "created_at": iso_z(topic.created_at),
        "altered_at": iso_z(topic.altered_at),
    }


def subscription_render(sub: Subscription) -> dict[str, Any]:
    return {
        "name": sub.name,
        "broker": sub.broker.name,
        "topic_filter": sub.topic_filter,
        "queue": sub.queue.name,
        "durable": sub.durable,
        "activation_topic": sub.activation_topic or None,
        "deactivation_topic": sub.deactivation_topic or None,
        "new_publications_only": sub.new_publications_only,
        "active": sub.active,
        "created_at": iso_z(sub.created_at),
    }


def retained_render(row: RetainedPublication) -> dict[str, Any]:
    body = bytes(row.body)
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    return {
        "topic": row.topic,
        "msg_id": row.msg_id,
        "published_at": iso_z(row.published_at),
        "body": text,
        "body_base64": base64.b64encode(body).decode("ascii"),
        "message": row.message,
    }

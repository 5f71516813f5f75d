"""What the publish/subscribe endpoints share: input serializers that refuse unknown fields,
and the output serializers (the publication is an Operation: pubsub/api/operations.py)."""

from __future__ import annotations

import base64

from rest_framework import serializers

from ..models import TOPIC_MAX, RetainedPublication


class StrictSerializer(serializers.Serializer):
    """An input serializer: a JSON object with only its own fields (400 ``invalid`` naming
    any other)."""

    extra_fields: frozenset[str] = frozenset()

    def to_internal_value(self, data):
        if not isinstance(data, dict):
            raise serializers.ValidationError({"body": ["Must be a JSON object."]})
        unknown = sorted(set(data) - set(self.fields) - self.extra_fields)
        if unknown:
            raise serializers.ValidationError({name: ["Unknown field."] for name in unknown})
        return super().to_internal_value(data)


def topic_field(**kwargs) -> serializers.CharField:
    return serializers.CharField(max_length=TOPIC_MAX, trim_whitespace=False, **kwargs)


class RetainedOutput(serializers.Serializer):
    topic = serializers.CharField()
    msg_id = serializers.CharField()
    published_at = serializers.DateTimeField()
    body = serializers.SerializerMethodField()
    body_base64 = serializers.SerializerMethodField()
    message = serializers.JSONField(help_text="The other message fields of the publication.")

    def get_body(self, row: RetainedPublication) -> str | None:
        try:
            return bytes(row.body).decode("utf-8")
        except UnicodeDecodeError:
            return None

    def get_body_base64(self, row: RetainedPublication) -> str:
        return base64.b64encode(bytes(row.body)).decode("ascii")


class TopicOutput(serializers.Serializer):
    name = serializers.CharField()
    broker = serializers.CharField(source="broker.name")
    topic_string = serializers.CharField()
    conflation_interval_ms = serializers.IntegerField()
    durable_subscriptions = serializers.BooleanField()
    description = serializers.CharField()
    created_at = serializers.DateTimeField()
    altered_at = serializers.DateTimeField()


class SubscriptionOutput(serializers.Serializer):
    name = serializers.CharField()
    broker = serializers.CharField(source="broker.name")
    topic_filter = serializers.CharField()
    queue = serializers.CharField(source="queue.name")
    durable = serializers.BooleanField()
    activation_topic = serializers.CharField(allow_null=True)
    deactivation_topic = serializers.CharField(allow_null=True)
    new_publications_only = serializers.BooleanField()
    active = serializers.BooleanField()
    created_at = serializers.DateTimeField()

    def to_representation(self, instance):
        data = super().to_representation(instance)
        for name in ("activation_topic", "deactivation_topic"):
            data[name] = data[name] or None
        return data

"""REST views for channels and for the receiving end of channels from other platforms.
Validate, call one service, render (API.md, "Channels")."""
from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers
from django.utils import timezone
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from config.errors import InvalidInput

from .models import Channel
from .permissions import channels_visible, require_channel_display, require_channel_operate
from .selectors import channel_windows
from .services.channel_rate import rate_decayed
from .services.channel_definitions import (
    channel_alter, channel_define, channel_delete, channel_get, channel_start, channel_stop,
)
from .services.channel_receiver import (
    receiver_batch_backout, receiver_batch_commit, receiver_batch_receive, receiver_batch_status,
)


def channel_render(c: Channel, window: dict | None = None) -> dict[str, Any]:
    window = window if window is not None else channel_windows(channels=[c])[c.pk]
    now = timezone.now()
    oldest = None
    if window["oldest_seq"] is not None:
        oldest = {"seq": window["oldest_seq"], "age_s": round((now - window["oldest_at"]).total_seconds(), 3)}
    return {
        "name": c.name, "source_broker": c.source_broker.name, "transmission_queue": c.transmission_queue,
        "target_broker": c.target_broker, "target_url": c.target_url or None,
        "target_token": "***" if c.target_token else None, "batch_size": c.batch_size,
        "batch_interval_ms": c.batch_interval_ms, "batch_bytes": c.batch_bytes, "window": c.window,
        "preemptive": c.preemptive, "description": c.description,
        "enabled": c.enabled, "state": c.state, "batches_committed": c.batches_committed,
        "batches_backed_out": c.batches_backed_out, "messages_sent": c.messages_sent,
        "bytes_sent": c.bytes_sent, "last_batch_seq": c.last_batch_seq, "in_doubt_seq": window["oldest_seq"],
        "batches_in_flight": window["in_flight"], "oldest_unconfirmed": oldest,
        "messages_per_s": round(rate_decayed(rate=c.rate_messages, at=c.rate_at, now=now), 3),
        "bytes_per_s": round(rate_decayed(rate=c.rate_bytes, at=c.rate_at, now=now), 1), "last_error": c.last_error or None,
        "retry_count": c.retry_count, "next_attempt_at": c.next_attempt_at.isoformat() if c.next_attempt_at else None,
        "agent": c.lease_holder or None, "updated_at": c.updated_at.isoformat(),
    }


def _object(request: Request) -> dict[str, Any]:
    data = request.data
    if not isinstance(data, dict):
        raise InvalidInput("The request body must be a JSON object.", errors={"body": ["Must be an object."]})
    return dict(data)


def _operator(request: Request) -> None:
    """Channels move messages between brokers: defining, changing and running them, and
    receiving batches, is for superusers (brokers.permissions)."""
    require_channel_operate(request.user)


ChannelSchema = inline_serializer("Channel", {
    "name": serializers.CharField(), "source_broker": serializers.CharField(),
    "transmission_queue": serializers.CharField(), "target_broker": serializers.CharField(),
    "target_url": serializers.CharField(allow_null=True), "batch_size": serializers.IntegerField(),
    "batch_interval_ms": serializers.IntegerField(), "preemptive": serializers.BooleanField(),
    "state": serializers.ChoiceField(["stopped", "running", "retrying", "in_doubt"]),
    "batches_committed": serializers.IntegerField(), "batches_backed_out": serializers.IntegerField(),
    "messages_sent": serializers.IntegerField(), "last_batch_seq": serializers.IntegerField(),
    "last_error": serializers.CharField(allow_null=True),
    "batch_bytes": serializers.IntegerField(), "window": serializers.IntegerField(),
    "bytes_sent": serializers.IntegerField(), "in_doubt_seq": serializers.IntegerField(allow_null=True),
    "batches_in_flight": serializers.IntegerField(),
    "oldest_unconfirmed": inline_serializer("ChannelOldestBatch", {
        "seq": serializers.IntegerField(), "age_s": serializers.FloatField(),
    }, allow_null=True),
    "messages_per_s": serializers.FloatField(), "bytes_per_s": serializers.FloatField(),
})
ChannelInSchema = inline_serializer("ChannelDefinition", {
    "name": serializers.CharField(), "source_broker": serializers.CharField(),
    "transmission_queue": serializers.CharField(), "target_broker": serializers.CharField(),
    "target_url": serializers.CharField(required=False), "target_token": serializers.CharField(required=False),
    "batch_size": serializers.IntegerField(required=False), "batch_interval_ms": serializers.IntegerField(required=False),
    "batch_bytes": serializers.IntegerField(required=False), "window": serializers.IntegerField(required=False),
    "preemptive": serializers.BooleanField(required=False), "description": serializers.CharField(required=False),
})
ReceiverStatus = inline_serializer("BatchStatus", {
    "status": serializers.ChoiceField(["received", "committed", "pending", "backed_out", "unknown"]),
    "seq": serializers.IntegerField(),
})
BatchKey = inline_serializer("BatchKey", {
    "channel": serializers.CharField(), "source_broker": serializers.CharField(), "seq": serializers.IntegerField(),
})


class ChannelListView(APIView):
    @extend_schema(operation_id="channels_list", responses=inline_serializer("ChannelPage", {
        "count": serializers.IntegerField(), "results": serializers.ListField(child=serializers.DictField()),
    }))
    def get(self, request: Request) -> Response:
        channels = channels_visible(request.user, Channel.objects.select_related("source_broker").order_by("name"))
        windows = channel_windows(channels=channels)
        return Response({"count": len(channels), "results": [channel_render(c, windows[c.pk]) for c in channels]})

    @extend_schema(operation_id="channels_define", request=ChannelInSchema, responses={201: ChannelSchema})
    def post(self, request: Request) -> Response:
        _operator(request)
        data = _object(request)
        name = data.pop("name", None)
        if not isinstance(name, str):
            raise InvalidInput("A channel needs a name.", errors={"name": ["Required."]})
        return Response(channel_render(channel_define(name=name, **data)), status=201)


class ChannelDetailView(APIView):
    @extend_schema(operation_id="channels_display", responses=ChannelSchema)
    def get(self, request: Request, name: str) -> Response:
        require_channel_display(request.user, channel=name)
        return Response(channel_render(channel_get(name=name)))

    @extend_schema(operation_id="channels_alter", request=ChannelInSchema, responses=ChannelSchema)
    def patch(self, request: Request, name: str) -> Response:
        _operator(request)
        changes = _object(request)
        if "name" in changes:
            raise InvalidInput("Names cannot be changed.", errors={"name": ["Cannot be altered."]})
        return Response(channel_render(channel_alter(name=name, **changes)))

    @extend_schema(operation_id="channels_delete", responses={204: OpenApiResponse(description="Deleted.")})
    def delete(self, request: Request, name: str) -> Response:
        _operator(request)
        channel_delete(name=name)
        return Response(status=204)


class ChannelStartView(APIView):
    @extend_schema(operation_id="channels_start", request=None, responses=ChannelSchema)
    def post(self, request: Request, name: str) -> Response:
        _operator(request)
        return Response(channel_render(channel_start(name=name)))


class ChannelStopView(APIView):
    @extend_schema(operation_id="channels_stop", request=None, responses=ChannelSchema)
    def post(self, request: Request, name: str) -> Response:
        _operator(request)
        return Response(channel_render(channel_stop(name=name)))


def _batch_key(request: Request) -> dict[str, Any]:
    data = _object(request)
    key = {"channel": data.get("channel"), "source_broker": data.get("source_broker"), "seq": data.get("seq")}
    if not isinstance(key["channel"], str) or not isinstance(key["source_broker"], str) \
            or not isinstance(key["seq"], int) or isinstance(key["seq"], bool):
        raise InvalidInput("Name the channel, its source broker and the batch number.",
                           errors={k: ["Required."] for k, v in key.items() if v is None})
    return key


class ReceiverBatchView(APIView):
    @extend_schema(operation_id="receiver_batch_receive", request=inline_serializer("Batch", {
        "channel": serializers.CharField(), "source_broker": serializers.CharField(),
        "target_broker": serializers.CharField(), "seq": serializers.IntegerField(),
        "provisional": serializers.BooleanField(), "messages": serializers.ListField(child=serializers.DictField()),
    }), responses=ReceiverStatus)
    def post(self, request: Request) -> Response:
        _operator(request)
        return Response(receiver_batch_receive(payload=_object(request)))


class ReceiverCommitView(APIView):
    @extend_schema(operation_id="receiver_batch_commit", request=BatchKey, responses=ReceiverStatus)
    def post(self, request: Request) -> Response:
        _operator(request)
        return Response(receiver_batch_commit(**_batch_key(request)))


class ReceiverBackoutView(APIView):
    @extend_schema(operation_id="receiver_batch_backout", request=BatchKey, responses=ReceiverStatus)
    def post(self, request: Request) -> Response:
        _operator(request)
        return Response(receiver_batch_backout(**_batch_key(request)))


class ReceiverStatusView(APIView):
    @extend_schema(operation_id="receiver_batch_status", request=BatchKey, responses=ReceiverStatus)
    def post(self, request: Request) -> Response:
        _operator(request)
        return Response(receiver_batch_status(**_batch_key(request)))


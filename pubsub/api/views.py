"""REST views for publish/subscribe (docs/api.md, "Publish/subscribe"): check permission
(pubsub.permissions), validate with the view's InputSerializer, call one service, render
with its OutputSerializer."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from brokers.api.operations.rest import operation_response
from brokers.api.schema import operation as doc_operation

from .operations import PublicationPublish

from .. import permissions as may
from ..selectors import retained_list, subscription_get, subscription_list, topic_get, topic_list
from ..services.retained import retained_clear
from ..services.subscriptions import subscription_define, subscription_delete
from ..services.topics import topic_alter, topic_define, topic_delete
from .schema import NO_CONTENT, operation, page
from .serializers import (
    RetainedOutput,
    StrictSerializer,
    SubscriptionOutput,
    TopicOutput,
    topic_field,
)


def _valid(serializer_class, request: Request, **kwargs) -> dict:
    serializer = serializer_class(data=request.data if request.data is not None else {}, **kwargs)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


class TopicListView(APIView):
    class InputSerializer(StrictSerializer):
        class Meta:
            ref_name = "TopicDefineInput"

        name = serializers.CharField(max_length=48)
        topic_string = topic_field()
        conflation_interval_ms = serializers.IntegerField(min_value=0, max_value=86_400_000, default=0)
        durable_subscriptions = serializers.BooleanField(default=True)
        description = serializers.CharField(max_length=200, allow_blank=True, default="")

    OutputSerializer = TopicOutput

    @operation("topics_list", {200: page("TopicPage", TopicOutput)}, 404)
    def get(self, request: Request, broker: str) -> Response:
        may.require_display(request.user, broker=broker)
        rows = self.OutputSerializer(topic_list(broker=broker), many=True).data
        return Response({"count": len(rows), "results": rows})

    @operation("topics_define", {201: TopicOutput}, 400, 404, 409, request=InputSerializer)
    def post(self, request: Request, broker: str) -> Response:
        may.require_admin(request.user, broker=broker)
        topic = topic_define(broker=broker, **_valid(self.InputSerializer, request))
        return Response(self.OutputSerializer(topic).data, status=201)


class TopicDetailView(APIView):
    class InputSerializer(StrictSerializer):
        class Meta:
            ref_name = "TopicAlterInput"

        conflation_interval_ms = serializers.IntegerField(min_value=0, max_value=86_400_000, required=False)
        durable_subscriptions = serializers.BooleanField(required=False)
        description = serializers.CharField(max_length=200, allow_blank=True, required=False)

    OutputSerializer = TopicOutput

    @operation("topics_display", {200: TopicOutput}, 404, detail=True)
    def get(self, request: Request, broker: str, name: str) -> Response:
        may.require_display(request.user, broker=broker)
        return Response(self.OutputSerializer(topic_get(broker=broker, name=name)).data)

    @operation("topics_alter", {200: TopicOutput}, 400, 404, request=InputSerializer, detail=True)
    def patch(self, request: Request, broker: str, name: str) -> Response:
        may.require_admin(request.user, broker=broker)
        topic = topic_alter(broker=broker, name=name, **_valid(self.InputSerializer, request, partial=True))
        return Response(self.OutputSerializer(topic).data)

    @operation("topics_delete", {204: NO_CONTENT}, 404, detail=True)
    def delete(self, request: Request, broker: str, name: str) -> Response:
        may.require_admin(request.user, broker=broker)
        topic_delete(broker=broker, name=name)
        return Response(status=204)


class PublishView(APIView):
    """Publish: defined once in ``operations`` (REST, the session and the schema share it)."""

    @doc_operation(PublicationPublish, "publish", "publish/subscribe", 400, 404, 409, 413)
    def post(self, request: Request, broker: str) -> Response:
        return operation_response(PublicationPublish, request, broker=broker)


class SubscriptionListView(APIView):
    class InputSerializer(StrictSerializer):
        class Meta:
            ref_name = "SubscriptionDefineInput"

        name = serializers.CharField(max_length=48)
        topic_filter = topic_field()
        queue = serializers.CharField(max_length=48)
        durable = serializers.BooleanField(default=True)
        activation_topic = topic_field(required=False, allow_blank=True, allow_null=True, default="")
        deactivation_topic = topic_field(required=False, allow_blank=True, allow_null=True, default="")
        new_publications_only = serializers.BooleanField(default=False)

    OutputSerializer = SubscriptionOutput

    @operation("subscriptions_list", {200: page("SubscriptionPage", SubscriptionOutput)}, 404)
    def get(self, request: Request, broker: str) -> Response:
        may.require_display(request.user, broker=broker)
        rows = self.OutputSerializer(subscription_list(broker=broker), many=True).data
        return Response({"count": len(rows), "results": rows})

    @operation("subscriptions_define", {201: SubscriptionOutput}, 400, 404, 409, request=InputSerializer)
    def post(self, request: Request, broker: str) -> Response:
        may.require_admin(request.user, broker=broker)
        sub = subscription_define(broker=broker, **_valid(self.InputSerializer, request))
        return Response(self.OutputSerializer(subscription_get(broker=broker, name=sub.name)).data, status=201)


class SubscriptionDetailView(APIView):
    OutputSerializer = SubscriptionOutput

    @operation("subscriptions_display", {200: SubscriptionOutput}, 404, detail=True)
    def get(self, request: Request, broker: str, name: str) -> Response:
        may.require_display(request.user, broker=broker)
        return Response(self.OutputSerializer(subscription_get(broker=broker, name=name)).data)

    @operation("subscriptions_delete", {204: NO_CONTENT}, 404, detail=True)
    def delete(self, request: Request, broker: str, name: str) -> Response:
        may.require_admin(request.user, broker=broker)
        subscription_delete(broker=broker, name=name)
        return Response(status=204)


class RetainedView(APIView):
    class ListInputSerializer(StrictSerializer):
        class Meta:
            ref_name = "RetainedListInput"

        topic_filter = topic_field(default="#")
        limit = serializers.IntegerField(min_value=1, max_value=1000, required=False)
        offset = serializers.IntegerField(min_value=0, required=False)

    class ClearInputSerializer(StrictSerializer):
        class Meta:
            ref_name = "RetainedClearInput"

        topic = topic_field()

    OutputSerializer = RetainedOutput

    @operation(
        "retained_list",
        {200: page("RetainedPage", RetainedOutput)},
        400,
        404,
        parameters=[OpenApiParameter("topic_filter", str, description="A topic filter (default #).")],
    )
    def get(self, request: Request, broker: str) -> Response:
        may.require_display(request.user, broker=broker)
        params = self.ListInputSerializer(data=request.query_params.dict())
        params.is_valid(raise_exception=True)
        rows = retained_list(broker=broker, topic_filter=params.validated_data["topic_filter"])
        offset = params.validated_data.get("offset", 0)
        page = rows[offset : offset + params.validated_data.get("limit", 1000)]
        return Response({"count": len(rows), "results": self.OutputSerializer(page, many=True).data})

    @operation(
        "retained_clear",
        {204: NO_CONTENT},
        400,
        404,
        parameters=[OpenApiParameter("topic", str, required=True, description="The topic string.")],
    )
    def delete(self, request: Request, broker: str) -> Response:
        may.require_admin(request.user, broker=broker)
        params = self.ClearInputSerializer(data=request.query_params.dict())
        params.is_valid(raise_exception=True)
        retained_clear(broker=broker, topic=params.validated_data["topic"])
        return Response(status=204)

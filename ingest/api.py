"""REST: start an ingest, follow it, and (for the Spark job) report its progress."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from brokers import permissions as may
from brokers.api.schema import BROKER, QUEUE, responses
from config.input import validated

from .models import DEDUP_RETENTION_DAYS_MAX, Ingest, IngestFormat
from .selectors import ingest_get, ingest_list
from .services import ingest_progress_note, ingest_start


@extend_schema_serializer(component_name="Ingest")
class IngestOutputSerializer(serializers.ModelSerializer):
    class Meta:
        model = Ingest
        fields = [
            "id",
            "broker",
            "queue",
            "source",
            "format",
            "body_field",
            "key_field",
            "properties_fields",
            "dedup_retention_days",
            "state",
            "records_total",
            "records_done",
            "messages_put",
            "duplicates_skipped",
            "error",
            "created_at",
            "started_at",
            "finished_at",
        ]


class QueueIngestsView(APIView):
    """POST starts an ingest of staged files into the queue; GET lists the queue's latest."""

    @extend_schema_serializer(component_name="IngestStartInput")
    class InputSerializer(serializers.Serializer):
        source = serializers.CharField(
            max_length=1000, help_text="A file or folder, relative to the staging directory."
        )
        format = serializers.ChoiceField(choices=IngestFormat.choices, default=IngestFormat.JSONL)
        body_field = serializers.CharField(max_length=200, required=False, default="", allow_blank=True)
        key_field = serializers.CharField(max_length=200, required=False, default="", allow_blank=True)
        properties_fields = serializers.ListField(
            child=serializers.CharField(max_length=200), required=False, default=list, max_length=50
        )
        dedup_retention_days = serializers.IntegerField(
            min_value=1,
            max_value=DEDUP_RETENTION_DAYS_MAX,
            required=False,
            default=7,
            help_text="How long the queue remembers each record's key: a rerun within it skips every record put.",
        )

    OutputSerializer = IngestOutputSerializer

    @extend_schema_serializer(component_name="IngestList")
    class ListSerializer(serializers.Serializer):
        ingests = IngestOutputSerializer(many=True)

    @extend_schema(
        operation_id="ingests_start",
        tags=["ingest"],
        request=InputSerializer,
        parameters=[BROKER, QUEUE],
        responses=responses({202: OutputSerializer}, 400, 404, 413),
        summary="Start a Spark ingest of staged files into the queue",
    )
    def post(self, request: Request, broker: str, queue: str) -> Response:
        may.require_put(request.user, broker=broker, queue=queue)
        data = validated(self.InputSerializer, request)
        ingest = ingest_start(user=request.user, broker=broker, queue=queue, **data)
        return Response(self.OutputSerializer(ingest).data, status=202)

    @extend_schema(
        operation_id="ingests_list",
        tags=["ingest"],
        parameters=[BROKER, QUEUE],
        responses=responses({200: ListSerializer}, 404),
        summary="The queue's latest ingests",
    )
    def get(self, request: Request, broker: str, queue: str) -> Response:
        may.require_browse(request.user, broker=broker, queue=queue)
        return Response(self.ListSerializer({"ingests": ingest_list(broker=broker, queue=queue)}).data)


class IngestDetailView(APIView):
    OutputSerializer = IngestOutputSerializer

    @extend_schema(operation_id="ingests_display", tags=["ingest"], responses=responses({200: OutputSerializer}, 404))
    def get(self, request: Request, ingest_id: str) -> Response:
        ingest = ingest_get(ingest_id=ingest_id)
        may.require_browse(request.user, broker=ingest.broker, queue=ingest.queue)
        return Response(self.OutputSerializer(ingest).data)


class IngestProgressView(APIView):
    """Where the ingest's Spark job reports progress (with the starting user's token)."""

    @extend_schema_serializer(component_name="IngestProgressInput")
    class InputSerializer(serializers.Serializer):
        records_total = serializers.IntegerField(min_value=0, required=False)
        partition = serializers.IntegerField(min_value=0, required=False)
        attempt = serializers.IntegerField(min_value=0, required=False)
        done = serializers.IntegerField(min_value=0, required=False)
        put = serializers.IntegerField(min_value=0, required=False)

        def validate(self, attrs):
            if "records_total" not in attrs and not {"partition", "attempt", "done", "put"} <= set(attrs):
                raise serializers.ValidationError("Give records_total, or partition, attempt, done and put.")
            return attrs

    OutputSerializer = IngestOutputSerializer

    @extend_schema(
        operation_id="ingests_progress",
        tags=["ingest"],
        request=InputSerializer,
        responses=responses({200: OutputSerializer}, 400, 404, 409, 413),
        summary="Progress of a task of the ingest's Spark job",
    )
    def post(self, request: Request, ingest_id: str) -> Response:
        ingest = ingest_get(ingest_id=ingest_id)
        may.require_put(request.user, broker=ingest.broker, queue=ingest.queue)
        ingest = ingest_progress_note(ingest_id=ingest.pk, report=validated(self.InputSerializer, request))
        return Response(self.OutputSerializer(ingest).data)

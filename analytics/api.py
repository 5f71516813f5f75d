"""REST: run the analytics now, follow a run, read a broker's latest results."""

from __future__ import annotations

from django.db import transaction
from drf_spectacular.utils import extend_schema, extend_schema_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from brokers import permissions as may
from brokers.api.schema import BROKER, responses
from brokers.selectors import broker_get
from config.errors import PermissionDenied
from config.input import validated

from .models import AnalyticsRun
from .selectors import analytics_run_get, broker_analytics_get
from .services import analytics_run_start


@extend_schema_serializer(component_name="AnalyticsRun")
class RunOutputSerializer(serializers.ModelSerializer):
    class Meta:
        model = AnalyticsRun
        fields = ["id", "state", "trigger", "events_exported", "error", "created_at", "started_at", "finished_at"]


def _require_operator(user) -> None:
    """Runs read the whole journal (every broker): superusers and staff only."""
    if not (user.is_superuser or user.is_staff):
        raise PermissionDenied("Only administrators may run the analytics.")


class AnalyticsRunsView(APIView):
    @extend_schema_serializer(component_name="AnalyticsRunInput")
    class InputSerializer(serializers.Serializer):
        pass

    OutputSerializer = RunOutputSerializer

    @extend_schema(
        operation_id="analytics_run",
        tags=["analytics"],
        request=InputSerializer,
        responses=responses({202: OutputSerializer}, 400, 413),
        summary="Run the analytics now (they also run on a schedule)",
    )
    def post(self, request: Request) -> Response:
        _require_operator(request.user)
        validated(self.InputSerializer, request)
        with transaction.atomic():
            run = analytics_run_start()
        return Response(self.OutputSerializer(run).data, status=202)


class AnalyticsRunDetailView(APIView):
    OutputSerializer = RunOutputSerializer

    @extend_schema(
        operation_id="analytics_run_display", tags=["analytics"], responses=responses({200: OutputSerializer}, 404)
    )
    def get(self, request: Request, run_id: str) -> Response:
        _require_operator(request.user)
        return Response(self.OutputSerializer(analytics_run_get(run_id=run_id)).data)


class BrokerAnalyticsView(APIView):
    @extend_schema_serializer(component_name="BrokerAnalytics")
    class OutputSerializer(serializers.Serializer):
        broker = serializers.CharField()
        computed_at = serializers.DateTimeField(allow_null=True)
        run = serializers.CharField(allow_null=True)
        units_of_work = serializers.DictField(
            help_text=(
                "committed, rolled_back, cascaded, links, links_upstream_committed, max_chain_depth, saved_ms, "
                "wasted_ms"
            )
        )
        queues = serializers.ListField(
            child=serializers.DictField(),
            help_text=(
                "Per queue: puts, gets, backouts, backout_rate, dead_letters, expired, depth, oldest_age_ms, "
                "dwell_samples, dwell_p50_ms, dwell_p95_ms, dwell_p99_ms"
            ),
        )
        throughput = serializers.ListField(
            child=serializers.DictField(), help_text="Per queue and minute: puts, gets, depth"
        )
        chains = serializers.ListField(
            child=serializers.DictField(),
            help_text=("Per committed linked unit of work: transaction_id, chain_depth, saved_ms, chain_latency_ms"),
        )

    @extend_schema(
        operation_id="broker_analytics",
        tags=["analytics"],
        parameters=[BROKER],
        responses=responses({200: OutputSerializer}, 404),
        summary="The latest analytics results for a broker",
    )
    def get(self, request: Request, broker: str) -> Response:
        broker_get(name=broker)
        may.require_broker_display(request.user, broker=broker)
        found = broker_analytics_get(broker=broker)
        results = found.results if found else {}
        return Response(
            self.OutputSerializer(
                {
                    "broker": broker,
                    "computed_at": found.computed_at if found else None,
                    "run": found.run_id if found else None,
                    "units_of_work": results.get("broker", {}),
                    "queues": results.get("queues", []),
                    "throughput": results.get("throughput", []),
                    "chains": results.get("chains", []),
                }
            ).data
        )

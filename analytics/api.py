"""REST: run the analytics now, follow a run, read a broker's latest results; each operation
defined once (``brokers.api.operations``): its route, input, output and docs."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from django.db import transaction
from pydantic import Field

from brokers import permissions as may
from brokers.api.operations import Model, Operation
from brokers.api.render import iso_z
from brokers.api.schema import path_parameter
from brokers.selectors import broker_get
from baton_client.errors import PermissionDenied

from .models import AnalyticsRun, RunState, RunTrigger
from .selectors import analytics_run_get, broker_analytics_get
from .services import analytics_run_start

TAG = "analytics"
RUN_ID = path_parameter("run_id", "Analytics run id.", r"^[^/\x00]+$", "0" * 32)


class RunOut(Model):
    id: str
    state: Literal[tuple(RunState.values)]  # type: ignore[valid-type]
    trigger: Literal[tuple(RunTrigger.values)]  # type: ignore[valid-type]
    events_exported: int = Field(description="Journal events this run's increment added.")
    error: str
    created_at: str
    started_at: str | None
    finished_at: str | None


def run_render(run: AnalyticsRun) -> dict[str, Any]:
    return {
        "id": run.id,
        "state": run.state,
        "trigger": run.trigger,
        "events_exported": run.events_exported,
        "error": run.error,
        "created_at": iso_z(run.created_at),
        "started_at": iso_z(run.started_at),
        "finished_at": iso_z(run.finished_at),
    }


def _require_operator(user) -> None:
    """Runs read the whole journal (every broker): superusers and staff only."""
    if not (user.is_superuser or user.is_staff):
        raise PermissionDenied("Only administrators may run the analytics.")


class AnalyticsRunStart(Operation):
    """Run the analytics now (they also run on a schedule)"""

    route = "analytics/runs/"
    url_name = "analytics-runs"
    operation_id = "analytics_run"
    tag = TAG
    errors = (400, 413)
    success = 202

    class Input(Model):
        pass

    Output = RunOut

    @classmethod
    def permitted_first(cls, user, data: dict[str, Any]) -> None:
        _require_operator(user)

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        _require_operator(user)
        with transaction.atomic():
            run = analytics_run_start()
        return 202, run_render(run)


class AnalyticsRunDisplay(Operation):
    """An analytics run: its state and what it exported."""

    route = "analytics/runs/<id:run_id>/"
    url_name = "analytics-run-detail"
    method = "get"
    operation_id = "analytics_run_display"
    tag = TAG
    errors = (404,)
    path = ("run_id",)
    path_parameters = {"run_id": RUN_ID}

    class Input(Model):
        run_id: Annotated[str, Field(max_length=64)]

    Output = RunOut

    @classmethod
    def permitted_first(cls, user, data: dict[str, Any]) -> None:
        _require_operator(user)

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        _require_operator(user)
        return 200, run_render(analytics_run_get(run_id=data.run_id))


class BrokerAnalyticsDisplay(Operation):
    """The latest analytics results for a broker"""

    route = "brokers/<name:broker>/analytics/"
    url_name = "broker-analytics"
    method = "get"
    operation_id = "broker_analytics"
    tag = TAG
    errors = (404,)
    path = ("broker",)

    class Input(Model):
        broker: Annotated[str, Field(max_length=48)]

    class Output(Model):
        broker: str
        computed_at: str | None
        run: str | None
        units_of_work: dict[str, Any] = Field(
            description="committed, rolled_back, cascaded, links, links_upstream_committed, max_chain_depth, "
            "saved_ms, wasted_ms"
        )
        queues: list[dict[str, Any]] = Field(
            description="Per queue: puts, gets, backouts, backout_rate, dead_letters, expired, depth, "
            "oldest_age_ms, dwell_samples, dwell_p50_ms, dwell_p95_ms, dwell_p99_ms"
        )
        throughput: list[dict[str, Any]] = Field(description="Per queue and minute: puts, gets, depth")
        chains: list[dict[str, Any]] = Field(
            description="Per committed linked unit of work: transaction_id, chain_depth, saved_ms, chain_latency_ms"
        )
        workflow_hours: list[dict[str, Any]] = Field(
            description="Per workflow and hour: instances started, completed, failed, compensated, "
            "compensation_failed (docs/workflows.md)"
        )
        workflow_steps: list[dict[str, Any]] = Field(
            description="Per workflow step: units of work committed and backed out, duration and time held "
            "percentiles (docs/workflows.md)"
        )
        compensations: list[dict[str, Any]] = Field(
            description="Per workflow step: compensations requested, resubmitted, compensated, failed, and the time "
            "to compensate (docs/workflows.md)"
        )

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        broker_get(name=data.broker)
        may.require_broker_display(user, broker=data.broker)
        found = broker_analytics_get(broker=data.broker)
        results = found.results if found else {}
        return 200, {
            "broker": data.broker,
            "computed_at": iso_z(found.computed_at) if found else None,
            "run": found.run_id if found else None,
            "units_of_work": results.get("broker", {}),
            "queues": results.get("queues", []),
            "throughput": results.get("throughput", []),
            "chains": results.get("chains", []),
            **{name: results.get(name, []) for name in ("workflow_hours", "workflow_steps", "compensations")},
        }

"""REST: start an ingest, follow it, and (for the Spark job) report its progress; each
operation defined once (``brokers.api.operations``): its route, input, output and docs."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, model_validator

from brokers import permissions as may
from brokers.api.operations import Model, Operation
from brokers.api.render import iso_z
from brokers.api.schema import path_parameter

from .models import DEDUP_RETENTION_DAYS_MAX, Ingest, IngestFormat, IngestState
from .selectors import ingest_get, ingest_list
from .services import ingest_progress_note, ingest_start

TAG = "ingest"
INGEST_ID = path_parameter("ingest_id", "Ingest id.", r"^[^/\x00]+$", "0" * 32)
Formats = Literal[tuple(IngestFormat.values)]  # type: ignore[valid-type]
States = Literal[tuple(IngestState.values)]  # type: ignore[valid-type]
Field200 = Annotated[str, Field(max_length=200)]
Count = Annotated[int, Field(ge=0)]


class IngestOut(Model):
    id: str
    broker: str
    queue: str
    source: str
    format: Formats
    body_field: str
    key_field: str
    properties_fields: list[str]
    dedup_retention_days: int
    state: States
    records_total: int | None = Field(description="Counted before the first put.")
    records_done: int
    messages_put: int
    duplicates_skipped: int
    error: str
    created_at: str
    started_at: str | None
    finished_at: str | None


def ingest_render(ingest: Ingest) -> dict[str, Any]:
    return {
        "id": ingest.id,
        "broker": ingest.broker,
        "queue": ingest.queue,
        "source": ingest.source,
        "format": ingest.format,
        "body_field": ingest.body_field,
        "key_field": ingest.key_field,
        "properties_fields": ingest.properties_fields,
        "dedup_retention_days": ingest.dedup_retention_days,
        "state": ingest.state,
        "records_total": ingest.records_total,
        "records_done": ingest.records_done,
        "messages_put": ingest.messages_put,
        "duplicates_skipped": ingest.duplicates_skipped,
        "error": ingest.error,
        "created_at": iso_z(ingest.created_at),
        "started_at": iso_z(ingest.started_at),
        "finished_at": iso_z(ingest.finished_at),
    }


class QueueRef(Model):
    """A body's types are JSON's own: ``"7"`` is no number (strict)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    broker: Annotated[str, Field(max_length=48)]
    queue: Annotated[str, Field(max_length=48)]


class IngestRef(Model):
    model_config = ConfigDict(extra="forbid", strict=True)
    ingest_id: Annotated[str, Field(max_length=64)]


class IngestStart(Operation):
    """Start a Spark ingest of staged files into the queue"""

    route = "brokers/<name:broker>/queues/<name:queue>/ingests/"
    url_name = "queue-ingests"
    operation_id = "ingests_start"
    tag = TAG
    errors = (400, 404, 413)
    path = ("broker", "queue")
    success = 202

    class Input(QueueRef):
        source: Annotated[
            str,
            Field(min_length=1, max_length=1000, description="A file or folder, relative to the staging directory."),
        ]
        format: Formats = IngestFormat.JSONL.value
        body_field: Field200 = ""
        key_field: Field200 = ""
        properties_fields: Annotated[list[Field200], Field(max_length=50)] = []
        dedup_retention_days: Annotated[
            int,
            Field(
                ge=1,
                le=DEDUP_RETENTION_DAYS_MAX,
                description="How long the queue remembers each record's key: a rerun within it skips every record put.",
            ),
        ] = 7

        @model_validator(mode="after")
        def _text_has_no_fields(self):
            if self.format == IngestFormat.TEXT and (self.body_field or self.key_field or self.properties_fields):
                raise ValueError("format: body_field, key_field and properties_fields need jsonl or csv.")
            return self

    Output = IngestOut

    @classmethod
    def permitted_first(cls, user, data: dict[str, Any]) -> None:
        may.require_put(user, broker=data["broker"], queue=data["queue"])

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        may.require_put(user, broker=data.broker, queue=data.queue)
        return 202, ingest_render(ingest_start(user=user, **data.model_dump()))


class IngestList(Operation):
    """The queue's latest ingests"""

    route = IngestStart.route
    method = "get"
    operation_id = "ingests_list"
    tag = TAG
    errors = (404,)
    path = ("broker", "queue")
    Input = QueueRef

    class Output(Model):
        ingests: list[IngestOut]

    @classmethod
    def perform(cls, user, data: QueueRef) -> tuple[int, dict[str, Any]]:
        may.require_browse(user, broker=data.broker, queue=data.queue)
        return 200, {"ingests": [ingest_render(i) for i in ingest_list(broker=data.broker, queue=data.queue)]}


class IngestDisplay(Operation):
    """An ingest: its state and counts."""

    route = "ingests/<id:ingest_id>/"
    url_name = "ingest-detail"
    method = "get"
    operation_id = "ingests_display"
    tag = TAG
    errors = (404,)
    path = ("ingest_id",)
    path_parameters = {"ingest_id": INGEST_ID}
    Input = IngestRef
    Output = IngestOut

    @classmethod
    def perform(cls, user, data: IngestRef) -> tuple[int, dict[str, Any]]:
        ingest = ingest_get(ingest_id=data.ingest_id)
        may.require_browse(user, broker=ingest.broker, queue=ingest.queue)
        return 200, ingest_render(ingest)


class IngestProgress(Operation):
    """Progress of a task of the ingest's Spark job"""

    route = "ingests/<id:ingest_id>/progress/"
    url_name = "ingest-progress"
    operation_id = "ingests_progress"
    tag = TAG
    errors = (400, 404, 409, 413)
    path = ("ingest_id",)
    path_parameters = {"ingest_id": INGEST_ID}

    class Input(IngestRef):
        """``records_total`` from the driver, or ``partition``, ``attempt``, ``done`` and
        ``put`` (this attempt's totals so far) from a task."""

        records_total: Count = None
        partition: Count = None
        attempt: Count = None
        done: Count = None
        put: Count = None

        @model_validator(mode="after")
        def _one_report(self):
            given = self.model_fields_set
            if "records_total" not in given and not {"partition", "attempt", "done", "put"} <= given:
                raise ValueError("non_field_errors: Give records_total, or partition, attempt, done and put.")
            return self

    Output = IngestOut

    @classmethod
    def permitted_first(cls, user, data: dict[str, Any]) -> None:
        ingest = ingest_get(ingest_id=str(data["ingest_id"]))  # 404 before 403, as for a display
        may.require_put(user, broker=ingest.broker, queue=ingest.queue)

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        ingest = ingest_get(ingest_id=data.ingest_id)
        may.require_put(user, broker=ingest.broker, queue=ingest.queue)
        report = data.model_dump(exclude_unset=True, exclude={"ingest_id"})
        return 200, ingest_render(ingest_progress_note(ingest_id=ingest.pk, report=report))

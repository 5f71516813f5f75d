"""Workflows' operations, each defined once (``brokers.api.operations``) for REST, the
session (``workflow_start``, ``step_complete``, ``steps_complete``, ``step_fail``, ``step_compensated``,
``workflow_abort``, ``workflow_resubmit``, ``workflow_instance``) and the schema."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from django.conf import settings
from pydantic import AfterValidator, ConfigDict, Field

from brokers.api.operations import Model, Operation
from brokers.api.operations.base import Wait
from brokers.services.message_input import MessageIn, Name

from .. import permissions as may
from ..models import InstanceState, StepState
from ..selectors import (
    instance_get,
    instance_summary,
    instance_view,
    instances_find,
    workflow_get,
    workflow_list,
    workflow_view,
)
from ..services.definitions import MAX_DEADLINE_MS, MAX_STEPS, workflow_alter, workflow_define, workflow_delete
from ..services.instances import (
    Completion,
    compensation_resubmit,
    instance_start,
    step_compensated,
    step_complete,
    step_fail,
    steps_complete,
    workflow_abort,
)
from . import schema  # noqa: F401  (the path parameters)


TAG = "workflows"
TransactionId = Annotated[str, Field(max_length=64, description="A unit of work's id.")]
InstanceId = Annotated[str, Field(max_length=64, description="A workflow instance's id (48 hex characters).")]
InstanceStates = Literal[tuple(InstanceState.values)]  # type: ignore[valid-type]
StepStates = Literal[tuple(StepState.values)]  # type: ignore[valid-type]


class StepIn(Model):
    model_config = ConfigDict(extra="forbid", strict=True)
    name: Name
    queue: Name = Field(description="Where the step's requests are put.")
    compensation_queue: Name = Field(description="Where the step's compensation requests are put.")
    next: list[Name] | None = Field(
        None,
        description="The steps that follow (several: fan-out; a step named by "
        "several steps waits for all of them: fan-in; [] ends the "
        "branch). Default: the next step listed.",
    )


class StepOut(Model):
    name: str
    queue: str
    compensation_queue: str
    next: list[str]


class WorkflowOut(Model):
    name: str
    broker: str
    version: int
    description: str
    deadline_ms: int
    steps: list[StepOut]
    instances: dict[str, int] = Field(description="How many of its instances are in each state.")
    created_at: str | None
    altered_at: str | None


class Page(Model):
    limit: Annotated[int, Field(ge=1, le=1000, description="Rows a page returns.")] = settings.BATON_API_PAGE_SIZE
    offset: Annotated[int, Field(ge=0, le=10**9, description="Rows to skip.")] = 0


Steps = Annotated[list[StepIn], Field(min_length=1, max_length=MAX_STEPS)]
Deadline = Annotated[
    int,
    Field(
        ge=0, le=MAX_DEADLINE_MS, description="An instance with no step committed for this long fails (0: no deadline)."
    ),
]
Description = Annotated[str, Field(max_length=200)]


def step_dicts(steps: list[StepIn]) -> list[dict]:
    """Parsed steps as the services take them (``next`` only where it was given)."""
    return [s.model_dump(exclude_none=True) if s.next is None else s.model_dump() for s in steps]


class WorkflowList(Operation):
    """The broker's workflows."""

    route = "brokers/<name:broker>/workflows/"
    url_name = "workflow-list"
    method = "get"
    query = True
    operation_id = "workflows_list"
    tag = TAG
    errors = (400, 404)

    path = ("broker",)

    class Input(Page):
        broker: Annotated[str, Field(max_length=48)]

    class Output(Model):
        count: int
        results: list[WorkflowOut]

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        may.require_display(user, broker=data.broker)
        rows = workflow_list(broker=data.broker)
        return 200, {
            "count": len(rows),
            "results": [workflow_view(w) for w in rows[data.offset : data.offset + data.limit]],
        }


class WorkflowDefine(Operation):
    """Define a workflow: its steps (queue and compensation queue each), its deadline."""

    route = "brokers/<name:broker>/workflows/"
    operation_id = "workflows_define"
    tag = TAG
    errors = (400, 404, 409)

    path = ("broker",)
    success = 201

    class Input(Model):
        model_config = ConfigDict(extra="forbid", strict=True)
        broker: Annotated[str, Field(max_length=48)]
        name: Name
        steps: Steps
        deadline_ms: Deadline = 0
        description: Description = ""

    Output = WorkflowOut

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        may.require_admin(user, broker=data.broker)
        workflow = workflow_define(
            broker=data.broker,
            name=data.name,
            steps=step_dicts(data.steps),
            deadline_ms=data.deadline_ms,
            description=data.description,
            user=user,
        )
        return 201, workflow_view(workflow)


class WorkflowDisplay(Operation):
    """A workflow's current definition and its instances' counts by state."""

    route = "brokers/<name:broker>/workflows/<name:name>/"
    url_name = "workflow-detail"
    method = "get"
    operation_id = "workflows_display"
    tag = TAG
    errors = (404,)

    path = ("broker", "name")

    class Input(Model):
        broker: Annotated[str, Field(max_length=48)]
        name: Annotated[str, Field(max_length=200)]

    Output = WorkflowOut

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        may.require_display(user, broker=data.broker)
        return 200, workflow_view(workflow_get(broker=data.broker, name=data.name))


class WorkflowAlter(Operation):
    """Alter a workflow: a new version (running instances keep theirs)."""

    route = "brokers/<name:broker>/workflows/<name:name>/"
    method = "patch"
    operation_id = "workflows_alter"
    tag = TAG
    errors = (400, 404)

    path = ("broker", "name")

    class Input(Model):
        model_config = ConfigDict(extra="forbid", strict=True)
        broker: Annotated[str, Field(max_length=48)]
        name: Annotated[str, Field(max_length=200)]
        steps: Steps | None = None
        deadline_ms: Deadline | None = None
        description: Description | None = None

    Output = WorkflowOut

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        may.require_admin(user, broker=data.broker)
        changes: dict[str, Any] = {}
        if data.steps is not None:
            changes["steps"] = step_dicts(data.steps)
        if data.deadline_ms is not None:
            changes["deadline_ms"] = data.deadline_ms
        if data.description is not None:
            changes["description"] = data.description
        return 200, workflow_view(workflow_alter(broker=data.broker, name=data.name, user=user, **changes))


class WorkflowDelete(Operation):
    """Delete a workflow and its ended instances (409 while an instance has not ended)."""

    route = "brokers/<name:broker>/workflows/<name:name>/"
    method = "delete"
    operation_id = "workflows_delete"
    tag = TAG
    errors = (404, 409)

    path = ("broker", "name")
    success = 204

    class Input(Model):
        broker: Annotated[str, Field(max_length=48)]
        name: Annotated[str, Field(max_length=200)]

    class Output(Model):
        pass

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        may.require_admin(user, broker=data.broker)
        workflow_delete(broker=data.broker, name=data.name)
        return 204, {}


class InstanceOut(Model):
    id: str
    workflow: str
    version: int
    state: InstanceStates
    reason: str | None
    started_at: str | None
    ended_at: str | None


class WorkflowStart(Operation):
    """Start an instance: put the first step's request (under ``transaction`` if given: the
    instance starts only if that unit of work commits)."""

    route = "brokers/<name:broker>/workflows/<name:name>/instances/"
    operation_id = "workflow_instances_start"
    tag = TAG
    errors = (400, 404, 409, 413)

    session = "workflow_start"
    path = ("broker", "name")
    success = 201

    class Input(MessageIn):
        model_config = ConfigDict(extra="forbid", strict=True)
        broker: Annotated[str, Field(max_length=48)]
        name: Annotated[str, Field(max_length=200)]
        transaction: TransactionId | None = Field(None, description="Start under this unit of work.")

    class Output(InstanceOut):
        transaction: str | None

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        may.require_start(user, broker=data.broker, name=data.name)
        instance = instance_start(
            broker=data.broker,
            name=data.name,
            message=MessageIn.to_input(data),
            transaction_id=data.transaction or None,
            user=user,
        )
        return 201, {**instance_summary(instance), "transaction": data.transaction or None}


class InstanceFind(Operation):
    """Find a workflow's instances, newest first."""

    route = "brokers/<name:broker>/workflows/<name:name>/instances/"
    url_name = "workflow-instances"
    method = "get"
    query = True
    operation_id = "workflow_instances_find"
    tag = TAG
    errors = (400, 404)

    path = ("broker", "name")

    class Input(Page):
        broker: Annotated[str, Field(max_length=48)]
        name: Annotated[str, Field(max_length=200)]
        state: InstanceStates | None = None
        older_than_ms: Annotated[int, Field(ge=0, le=10**13, description="Started at least this long ago.")] | None = (
            None
        )
        step: (
            Annotated[
                str,
                Field(
                    max_length=48,
                    description="Standing at this step: its request out, or it in flight or being compensated.",
                ),
            ]
            | None
        ) = None

    class Output(Model):
        count: int
        results: list[InstanceOut]

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        may.require_display(user, broker=data.broker)
        count, rows = instances_find(
            broker=data.broker,
            name=data.name,
            state=data.state,
            older_than_ms=data.older_than_ms,
            step=data.step,
            limit=data.limit,
            offset=data.offset,
        )
        return 200, {"count": count, "results": [instance_summary(i) for i in rows]}


class InstanceStepOut(Model):
    name: str
    state: StepStates
    transaction: str | None
    committed_at: str | None
    compensated_at: str | None
    queue: str
    compensation_queue: str
    next: list[str]
    commit_order: int | None
    compensation_transaction: str | None


class HeldOut(Model):
    downstream: str
    upstream: str | None
    upstream_transaction: str
    downstream_transaction: str
    open: bool


class HistoryOut(Model):
    at: str | None
    event: str
    step: str | None
    transaction: str | None
    detail: str | None


class InstanceDetailOut(InstanceOut):
    broker: str
    transaction: str | None = Field(description="The unit of work that started it, until that commits.")
    transaction_state: str | None
    steps: list[InstanceStepOut]
    held: list[HeldOut] = Field(description="Steps whose unit of work is held on (linked to) another's.")
    compensation_path: list[str] = Field(
        description="The committed steps, newest commit first: the order of their compensations."
    )
    history: list[HistoryOut]


class InstanceDisplay(Operation):
    """An instance: its steps as their units of work stand, held links, compensation path,
    history."""

    route = "workflow-instances/<id:instance>/"
    url_name = "workflow-instance"
    method = "get"
    operation_id = "workflow_instances_display"
    tag = TAG
    errors = (404,)

    session = "workflow_instance"
    path = ("instance",)

    class Input(Model):
        instance: InstanceId

    Output = InstanceDetailOut

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        may.require_instance_display(user, instance_id=data.instance)
        return 200, instance_view(instance_get(instance_id=data.instance))


class StepResult(Model):
    instance: str
    step: str
    state: StepStates
    transaction: str | None


class StepComplete(Operation):
    """Complete a step in the unit of work that got its request: puts the next step(s)'
    requests with ``output`` and records ``compensation``; counts when it commits."""

    route = "workflow-instances/<id:instance>/steps/<name:step>/complete/"
    url_name = "workflow-step-complete"
    operation_id = "workflow_steps_complete"
    tag = TAG
    errors = (400, 404, 409, 413)

    session = "step_complete"
    path = ("instance", "step")

    class Input(Model):
        model_config = ConfigDict(extra="forbid", strict=True)
        instance: InstanceId
        step: Annotated[str, Field(max_length=48)]
        transaction: TransactionId
        output: MessageIn | None = Field(None, description="The next step(s)' request.")
        compensation: MessageIn | None = Field(
            None, description="This step's compensation request, should it be compensated."
        )
        commit: bool = Field(
            False,
            description="Then commit the unit of work in the same database transaction: the step is `committed`, "
            "or `held` while an upstream unit of work it took a request from pre-emptively is open.",
        )
        wait: Wait = 0

    Output = StepResult

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        may.require_complete(user, instance_id=data.instance, step=data.step)
        row = step_complete(
            instance_id=data.instance,
            step=data.step,
            transaction_id=data.transaction,
            output=data.output.to_input() if data.output else None,
            compensation=data.compensation.to_input() if data.compensation else None,
            commit=data.commit,
            wait=data.wait,
            user=user,
        )
        return 200, {"instance": data.instance, "step": data.step, "state": row.state, "transaction": row.transaction}


def _completions_bounded(value: list) -> list:
    if len(value) > settings.BATON_MAX_BATCH:  # read per call: a deployment (or a test) may change it
        raise ValueError(f"At most {settings.BATON_MAX_BATCH} completions a call.")
    return value


class CompletionIn(Model):
    model_config = ConfigDict(extra="forbid", strict=True)
    instance: InstanceId
    step: Annotated[str, Field(max_length=48)]
    output: MessageIn | None = Field(None, description="The next step(s)' request.")
    compensation: MessageIn | None = Field(None, description="This step's compensation request.")


class StepsComplete(Operation):
    """Complete several steps in the unit of work that got their requests (a worker's batch),
    all or none, as ``step_complete`` completes one: one call, one database transaction."""

    route = "workflow-steps/complete/"
    url_name = "workflow-steps-complete"
    operation_id = "workflow_steps_complete_batch"
    tag = TAG
    errors = (400, 404, 409, 413)

    session = "steps_complete"

    class Input(Model):
        model_config = ConfigDict(extra="forbid", strict=True)
        transaction: TransactionId
        steps: Annotated[list[CompletionIn], Field(min_length=1), AfterValidator(_completions_bounded)] = Field(
            description="The completions (1 to BATON_MAX_BATCH, by default 1000), each of one step of an instance."
        )
        commit: bool = Field(
            False,
            description="Then commit the unit of work in the same database transaction: the steps are `committed`, "
            "or `held` while an upstream unit of work it took a request from pre-emptively is open.",
        )
        wait: Wait = 0

    class Output(Model):
        transaction: str
        steps: list[StepResult]

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        may.require_complete_all(user, steps=[(c.instance, c.step) for c in data.steps])
        rows = steps_complete(
            transaction_id=data.transaction,
            completions=[
                Completion(
                    instance_id=c.instance,
                    step=c.step,
                    output=c.output.to_input() if c.output else None,
                    compensation=c.compensation.to_input() if c.compensation else None,
                )
                for c in data.steps
            ],
            commit=data.commit,
            wait=data.wait,
            user=user,
        )
        return 200, {
            "transaction": data.transaction,
            "steps": [
                {"instance": c.instance, "step": c.step, "state": row.state, "transaction": row.transaction}
                for c, row in zip(data.steps, rows)
            ],
        }


class StepFail(Operation):
    """A step failed: the instance fails and compensation begins (under ``transaction``:
    when it commits)."""

    route = "workflow-instances/<id:instance>/steps/<name:step>/fail/"
    url_name = "workflow-step-fail"
    operation_id = "workflow_steps_fail"
    tag = TAG
    errors = (400, 404, 409)

    session = "step_fail"
    path = ("instance", "step")

    class Input(Model):
        model_config = ConfigDict(extra="forbid", strict=True)
        instance: InstanceId
        step: Annotated[str, Field(max_length=48)]
        reason: Annotated[str, Field(max_length=200)] = ""
        transaction: TransactionId | None = None

    class Output(Model):
        id: str
        state: InstanceStates
        transaction: str | None

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        may.require_fail(user, instance_id=data.instance, step=data.step)
        instance = step_fail(
            instance_id=data.instance,
            step=data.step,
            reason=data.reason,
            transaction_id=data.transaction or None,
            user=user,
        )
        return 200, {"id": instance.pk, "state": instance.state, "transaction": data.transaction or None}


class StepCompensated(Operation):
    """The step's compensation is done when this unit of work (which got its compensation
    request) commits; the next compensation is then issued."""

    route = "workflow-instances/<id:instance>/steps/<name:step>/compensated/"
    url_name = "workflow-step-compensated"
    operation_id = "workflow_steps_compensated"
    tag = TAG
    errors = (400, 404, 409)

    session = "step_compensated"
    path = ("instance", "step")

    class Input(Model):
        model_config = ConfigDict(extra="forbid", strict=True)
        instance: InstanceId
        step: Annotated[str, Field(max_length=48)]
        transaction: TransactionId
        commit: bool = Field(False, description="Then commit the unit of work in the same database transaction.")
        wait: Wait = 0

    Output = StepResult

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        may.require_compensated(user, instance_id=data.instance, step=data.step)
        row = step_compensated(
            instance_id=data.instance,
            step=data.step,
            transaction_id=data.transaction,
            commit=data.commit,
            wait=data.wait,
            user=user,
        )
        return 200, {"instance": data.instance, "step": data.step, "state": row.state, "transaction": data.transaction}


class InstanceStateOut(Model):
    id: str
    state: InstanceStates
    reason: str | None


class WorkflowAbort(Operation):
    """Abort an instance: steps in flight are backed out, committed steps compensated."""

    route = "workflow-instances/<id:instance>/abort/"
    url_name = "workflow-abort"
    operation_id = "workflow_instances_abort"
    tag = TAG
    errors = (400, 404, 409)

    session = "workflow_abort"
    path = ("instance",)
    success = 202

    class Input(Model):
        model_config = ConfigDict(extra="forbid", strict=True)
        instance: InstanceId
        reason: Annotated[str, Field(max_length=200)] = ""

    Output = InstanceStateOut

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        may.require_abort(user, instance_id=data.instance)
        instance = workflow_abort(instance_id=data.instance, reason=data.reason, user=user)
        return 202, {"id": instance.pk, "state": instance.state, "reason": instance.reason or None}


class CompensationResubmit(Operation):
    """Put a failed compensation's request again (instance ``compensation_failed``)."""

    route = "workflow-instances/<id:instance>/resubmit/"
    url_name = "workflow-resubmit"
    operation_id = "workflow_instances_resubmit"
    tag = TAG
    errors = (400, 404, 409)

    session = "workflow_resubmit"
    path = ("instance",)
    success = 202

    class Input(Model):
        model_config = ConfigDict(extra="forbid", strict=True)
        instance: InstanceId

    Output = InstanceStateOut

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        may.require_resubmit(user, instance_id=data.instance)
        instance = compensation_resubmit(instance_id=data.instance, user=user)
        return 202, {"id": instance.pk, "state": instance.state, "reason": instance.reason or None}

"""Defining, altering (a new version) and deleting workflows.

A workflow's steps run in the order listed unless a step names ``next`` (several names:
fan-out; a step named in several steps' ``next`` waits for all of them: fan-in; ``[]``: the
step ends its branch). The first step listed is the only one without a predecessor, and the
steps form no cycle. Every queue must exist on the broker (a local, alias or remote queue
a put can name).

What a definition holds is valid already (``WorkflowDefine.Input`` / ``WorkflowAlter.Input``
parsed it where it entered: names, 1 to MAX_STEPS steps, the deadline, the description);
these services check the steps as a whole (their names, ``next`` lists and order) and the
queues on the broker, and report every problem of the steps in one error."""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction as db

from brokers import permissions as may
from brokers.models import Queue, QueueKind
from brokers.selectors import broker_get
from baton_client.errors import AlreadyExists, InvalidInput

from baton_client.errors import NotEmpty
from ..exceptions import WorkflowNotFound
from ..models import ACTIVE_INSTANCE_STATES, Instance, Workflow, WorkflowStep, WorkflowVersion

#: The most steps a workflow may have.
MAX_STEPS = 50
#: The longest deadline: a year.
MAX_DEADLINE_MS = 365 * 86_400_000


def _steps_resolved(*, broker_id: int, steps: list[dict]) -> list[dict]:
    """The steps (each ``name``, ``queue``, ``compensation_queue`` and, if given, ``next``),
    checked as a whole, with ``successors`` and ``predecessors``. Raises InvalidInput naming
    every problem (``steps[1].queue``, ...)."""
    errors: dict[str, list[str]] = {}
    names: list[str] = []
    for i, step in enumerate(steps):
        name = step["name"]
        if name in names:
            errors.setdefault(f"steps[{i}].name", []).append("Another step has this name.")
        names.append(name)
    queue_names = {s[f] for s in steps for f in ("queue", "compensation_queue")}
    existing = set(Queue.objects.filter(broker_id=broker_id, name__in=queue_names).values_list("name", flat=True))
    for i, step in enumerate(steps):
        for field in ("queue", "compensation_queue"):
            if step[field] not in existing:
                errors.setdefault(f"steps[{i}].{field}", []).append(f"No queue {step[field]!r} on this broker.")
        nxt = step.get("next")
        if nxt is not None:
            for n in nxt:
                if n not in names:
                    errors.setdefault(f"steps[{i}].next", []).append(f"No step {n!r}.")
                elif n == names[i]:
                    errors.setdefault(f"steps[{i}].next", []).append("A step cannot follow itself.")
                elif n == names[0]:
                    errors.setdefault(f"steps[{i}].next", []).append("The first step has no predecessor.")
            if len(set(nxt)) != len(nxt):
                errors.setdefault(f"steps[{i}].next", []).append("A step is named twice.")
    if errors:
        raise InvalidInput("The workflow's steps are not valid.", errors=errors)
    resolved = []
    for i, step in enumerate(steps):
        nxt = step.get("next")
        successors = list(nxt) if nxt is not None else ([names[i + 1]] if i + 1 < len(steps) else [])
        resolved.append(
            {
                "name": names[i],
                "queue": step["queue"],
                "compensation_queue": step["compensation_queue"],
                "next": list(nxt) if nxt is not None else None,
                "successors": successors,
                "predecessors": [],
            }
        )
    by_name = {s["name"]: s for s in resolved}
    for s in resolved:
        for n in s["successors"]:
            by_name[n]["predecessors"].append(s["name"])
    for i, s in enumerate(resolved[1:], start=1):
        if not s["predecessors"]:
            errors.setdefault(f"steps[{i}].name", []).append(
                "No step leads here: only the first step starts without a predecessor."
            )
    if not errors and _has_cycle(resolved):
        errors["steps"] = ["The steps' next lists make a cycle."]
    if errors:
        raise InvalidInput("The workflow's steps are not valid.", errors=errors)
    return resolved


def _routes_checked(user, *, broker, steps: list[dict]) -> None:
    """Baton puts a workflow's requests on its steps' queues and compensation queues on
    behalf of whoever starts, completes or aborts an instance; a compensation request with
    no user at all. A queue among them that leads elsewhere (an alias, a remote queue) must
    lead where the definer may put (docs/permissions.md, "Indirect paths")."""
    if user is None:
        return
    names = {s[f] for s in steps for f in ("queue", "compensation_queue")}
    routed = Queue.objects.filter(broker=broker, name__in=names).exclude(kind=QueueKind.LOCAL)
    for name in sorted(routed.values_list("name", flat=True)):
        may.require_route_defined(user, broker=broker.name, queue=name, through=f"workflow queue {name!r}")


def _has_cycle(steps: list[dict]) -> bool:
    indegree = {s["name"]: len(s["predecessors"]) for s in steps}
    by_name = {s["name"]: s for s in steps}
    ready = [n for n, d in indegree.items() if d == 0]
    seen = 0
    while ready:
        name = ready.pop()
        seen += 1
        for n in by_name[name]["successors"]:
            indegree[n] -= 1
            if indegree[n] == 0:
                ready.append(n)
    return seen != len(steps)


def _version_new(
    *, workflow: Workflow, number: int, steps: list[dict], deadline_ms: int, description: str
) -> WorkflowVersion:
    version = WorkflowVersion.objects.create(
        workflow=workflow, version=number, deadline_ms=deadline_ms, description=description
    )
    WorkflowStep.objects.bulk_create(
        [
            WorkflowStep(
                version=version,
                position=i,
                name=s["name"],
                queue=s["queue"],
                compensation_queue=s["compensation_queue"],
                next=s["next"],
                successors=s["successors"],
                predecessors=s["predecessors"],
            )
            for i, s in enumerate(steps)
        ]
    )
    return version


def workflow_define(
    *, broker: str, name: str, steps: list[dict], deadline_ms: int = 0, description: str = "", user=None
) -> Workflow:
    """Define a workflow (its version 1). Raises InvalidInput (steps that do not fit
    together, a queue that does not exist), AlreadyExists, PermissionDenied (a queue that
    leads where ``user`` may not put; None: system code)."""
    owner = broker_get(name=broker)
    resolved = _steps_resolved(broker_id=owner.pk, steps=steps)
    _routes_checked(user, broker=owner, steps=resolved)
    try:
        with db.atomic():
            workflow = Workflow.objects.create(broker=owner, name=name, version=1)
            _version_new(workflow=workflow, number=1, steps=resolved, deadline_ms=deadline_ms, description=description)
    except IntegrityError:
        raise AlreadyExists(
            f"Workflow {name!r} already exists on broker {broker!r}.", broker=broker, workflow=name
        ) from None
    return workflow


def workflow_locked(*, broker: str, name: str) -> Workflow:
    """The workflow's row, locked. Caller holds an open database transaction."""
    workflow = (
        Workflow.objects.select_for_update().filter(broker__name=broker, name=name).select_related("broker").first()
    )
    if workflow is None:
        broker_get(name=broker)
        raise WorkflowNotFound(f"No workflow {name!r} on broker {broker!r}.", broker=broker, workflow=name)
    return workflow


def workflow_alter(*, broker: str, name: str, user=None, **changes: Any) -> Workflow:
    """Alter a workflow: a new version with the given ``steps``, ``deadline_ms`` and
    ``description`` (the others as in the current version). Running instances keep theirs.
    New steps' queues are checked as ``workflow_define`` checks them."""
    with db.atomic():
        workflow = workflow_locked(broker=broker, name=name)
        current = WorkflowVersion.objects.get(workflow=workflow, version=workflow.version)
        deadline_ms = changes.get("deadline_ms", current.deadline_ms)
        description = changes.get("description", current.description)
        if "steps" in changes:
            resolved = _steps_resolved(broker_id=workflow.broker_id, steps=changes["steps"])
            _routes_checked(user, broker=workflow.broker, steps=resolved)
        else:
            resolved = [
                {
                    "name": s.name,
                    "queue": s.queue,
                    "compensation_queue": s.compensation_queue,
                    "next": s.next,
                    "successors": s.successors,
                    "predecessors": s.predecessors,
                }
                for s in current.steps.all()
            ]
        workflow.version += 1
        Workflow.objects.filter(pk=workflow.pk).update(version=workflow.version)
        _version_new(
            workflow=workflow, number=workflow.version, steps=resolved, deadline_ms=deadline_ms, description=description
        )
    return workflow


def workflow_delete(*, broker: str, name: str) -> None:
    """Delete a workflow, its versions and its ended instances. Raises NotEmpty (409) while
    an instance has not ended (running, compensating, or waiting on a failed compensation)."""
    with db.atomic():
        workflow = workflow_locked(broker=broker, name=name)
        running = Instance.objects.filter(workflow=workflow, state__in=ACTIVE_INSTANCE_STATES).count()
        if running:
            raise NotEmpty(
                f"Workflow {name!r} has {running} instance(s) that have not ended; abort them or let them "
                "finish first.",
                broker=broker,
                workflow=name,
                running=running,
            )
        workflow.delete()

"""Reads of workflows and instances, as the API renders them. A step's shown state follows
its units of work: a pending or backed-out step whose request a unit of work has got is
``in_flight``; a step completed under a unit of work whose commit is held is ``held``."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db.models import Count, Q
from django.utils import timezone

from brokers.selectors import broker_get, messages_where
from transactions.models import Link, Transaction, TransactionState

from .exceptions import InstanceNotFound, WorkflowNotFound
from .models import (
    ACTIVE_INSTANCE_STATES,
    Instance,
    InstanceState,
    InstanceStep,
    StepRequest,
    StepState,
    Workflow,
    WorkflowVersion,
)


def _iso(value) -> str | None:
    return value.isoformat() if value else None


def workflow_get(*, broker: str, name: str) -> Workflow:
    workflow = Workflow.objects.filter(broker__name=broker, name=name).select_related("broker").first()
    if workflow is None:
        broker_get(name=broker)
        raise WorkflowNotFound(f"No workflow {name!r} on broker {broker!r}.", broker=broker, workflow=name)
    return workflow


def workflow_list(*, broker: str) -> list[Workflow]:
    owner = broker_get(name=broker)
    return list(Workflow.objects.filter(broker=owner).select_related("broker").order_by("name"))


def workflow_view(workflow: Workflow, *, version: int | None = None) -> dict[str, Any]:
    """A workflow as the API shows it: its current version's definition (or ``version``'s),
    and how many of its instances are in each state."""
    current = WorkflowVersion.objects.get(workflow=workflow, version=version or workflow.version)
    counts = dict(Instance.objects.filter(workflow=workflow).values_list("state").annotate(n=Count("pk")))
    return {
        "name": workflow.name,
        "broker": workflow.broker.name,
        "version": current.version,
        "description": current.description,
        "deadline_ms": current.deadline_ms,
        "steps": [
            {"name": s.name, "queue": s.queue, "compensation_queue": s.compensation_queue, "next": s.successors}
            for s in current.steps.all()
        ],
        "instances": {state: counts.get(state, 0) for state in InstanceState.values},
        "created_at": _iso(workflow.created_at),
        "altered_at": _iso(current.created_at),
    }


def instance_get(*, instance_id: str) -> Instance:
    instance = Instance.objects.filter(pk=instance_id).select_related("broker", "workflow", "version").first()
    if instance is None:
        raise InstanceNotFound(f"No workflow instance {instance_id}.", instance=instance_id)
    return instance


def instances_find(
    *,
    broker: str,
    name: str | None = None,
    state: str | None = None,
    older_than_ms: int | None = None,
    step: str | None = None,
    limit: int = 100,
    offset: int = 0,
) -> tuple[int, list[Instance]]:
    """Instances of a workflow (or of every workflow of the broker), newest first:
    ``state``, started more than ``older_than_ms`` ago, ``step``: standing at that step (its
    request put and not yet committed, or its compensation out). Returns the count and a page."""
    rows = Instance.objects.filter(broker=broker_get(name=broker)).exclude(
        start_transaction__in=Transaction.objects.filter(state=TransactionState.ROLLED_BACK).values("pk")
    )
    if name is not None:
        rows = rows.filter(workflow=workflow_get(broker=broker, name=name))
    if state:
        rows = rows.filter(state=state)
    if older_than_ms:
        rows = rows.filter(started_at__lte=timezone.now() - timedelta(milliseconds=older_than_ms))
    if step:
        rows = rows.filter(
            Q(requests__step=step, requests__open=True)
            | Q(steps__name=step, steps__state__in=[StepState.IN_FLIGHT, StepState.COMPENSATING])
        ).distinct()
    count = rows.count()
    return count, list(
        rows.select_related("workflow", "version").order_by("-started_at", "-pk")[offset : offset + limit]
    )


def instance_counts(*, broker: str) -> dict[str, dict[str, int]]:
    """Per workflow of the broker, its instances by state."""
    counts: dict[str, dict[str, int]] = {}
    for name, state, n in (
        Instance.objects.filter(broker=broker_get(name=broker))
        .values_list("workflow__name", "state")
        .annotate(n=Count("pk"))
    ):
        counts.setdefault(name, dict.fromkeys(InstanceState.values, 0))[state] = n
    return counts


def instance_summary(instance: Instance) -> dict[str, Any]:
    return {
        "id": instance.pk,
        "workflow": instance.workflow.name,
        "version": instance.version.version,
        "state": instance.state,
        "reason": instance.reason or None,
        "started_at": _iso(instance.started_at),
        "ended_at": _iso(instance.ended_at),
    }


def instance_view(instance: Instance) -> dict[str, Any]:
    """An instance with its steps (states as its units of work stand now), held edges
    (``links``: a step's unit of work held on another step's), the compensation path and
    its history."""
    steps = list(InstanceStep.objects.filter(instance=instance))
    definitions = {s.name: s for s in instance.version.steps.all()}
    requests = list(StepRequest.objects.filter(instance=instance, open=True))
    where = messages_where(
        broker=instance.broker.name, queues=[r.queue for r in requests], msg_ids=[r.msg_id for r in requests]
    )
    taken: dict[tuple[str, bool], str] = {}
    for r in requests:
        got = where.get(r.msg_id, {}).get("get_transaction")
        if got:
            taken[(r.step, r.compensation)] = got
    txn_ids = {s.transaction for s in steps if s.transaction} | set(taken.values())
    txn_states = dict(Transaction.objects.filter(pk__in=txn_ids).values_list("pk", "state"))
    rendered = []
    for s in steps:
        state, transaction = s.state, s.transaction or None
        if state in (StepState.PENDING, StepState.BACKED_OUT) and (s.name, False) in taken:
            state, transaction = StepState.IN_FLIGHT, taken[(s.name, False)]
        if state == StepState.IN_FLIGHT and txn_states.get(transaction) == TransactionState.COMMIT_HELD:
            state = StepState.HELD
        d = definitions[s.name]
        rendered.append(
            {
                "name": s.name,
                "state": state,
                "transaction": transaction,
                "committed_at": _iso(s.committed_at),
                "compensated_at": _iso(s.compensated_at),
                "queue": d.queue,
                "compensation_queue": d.compensation_queue,
                "next": d.successors,
                "commit_order": s.commit_order,
                "compensation_transaction": s.compensation_transaction or taken.get((s.name, True)) or None,
            }
        )
    by_txn = {
        r["transaction"]: r["name"]
        for r in rendered
        if r["transaction"] and r["state"] in (StepState.IN_FLIGHT, StepState.HELD)
    }
    held = []
    if by_txn:
        for up, down in Link.objects.filter(downstream_id__in=list(by_txn)).values_list("upstream_id", "downstream_id"):
            held.append(
                {
                    "downstream": by_txn[down],
                    "upstream": by_txn.get(up),
                    "upstream_transaction": up,
                    "downstream_transaction": down,
                    "open": txn_states.get(
                        up, Transaction.objects.filter(pk=up).values_list("state", flat=True).first()
                    )
                    in (TransactionState.ACTIVE, TransactionState.COMMIT_HELD),
                }
            )
    if instance.start_transaction:
        start_state = Transaction.objects.filter(pk=instance.start_transaction).values_list("state", flat=True).first()
    else:
        start_state = None
    path = [s["name"] for s in sorted((r for r in rendered if r["commit_order"]), key=lambda r: -r["commit_order"])]
    return {
        **instance_summary(instance),
        "broker": instance.broker.name,
        "transaction": instance.start_transaction or None,
        "transaction_state": start_state,
        "steps": rendered,
        "held": held,
        "compensation_path": path,
        "history": [
            {
                "at": _iso(h.at),
                "event": h.event,
                "step": h.step or None,
                "transaction": h.transaction or None,
                "detail": h.detail or None,
            }
            for h in instance.history.all()
        ],
    }


def instances_active(*, broker: str) -> int:
    return Instance.objects.filter(broker__name=broker, state__in=ACTIVE_INSTANCE_STATES).count()

"""The saga: when an instance fails (a step's fail, an abort, a step request dead-lettered
or backed out past its threshold, its deadline), a compensation request for each committed
step, newest committed first, one at a time.

``instance_advance`` issues the next compensation: it first rolls back the units of work
still completing steps of the instance (uncommitted work needs no compensation), then, in
one database transaction holding the instance's row, puts the next compensation request (or
ends the instance ``compensated``) only if no compensation is out and no step is still in
flight. It is idempotent, so it runs after every commit that may let the saga go on (on the
commit of that database transaction) and again from the sweep (``workflows_sweep``), which
makes up for a process that died in between: no compensation is lost, none is issued twice.
"""

from __future__ import annotations

import logging
import threading
from datetime import timedelta

from django.db import transaction as db
from django.utils import timezone

from baton_client.errors import BatonError
from transactions.durability import engine_step
from transactions.manager import transaction_rollback
from transactions.models import OPEN_STATES, Transaction

from brokers.models import Queue, QueueKind
from brokers.selectors import messages_where

from ..queries import instances_read
from ..models import HistoryEvent, Instance, InstanceState, InstanceStep, StepRequest, StepState
from .history import history_add
from .requests import message_from_fields, request_put
from .versions import instance_steps

log = logging.getLogger(__name__)
_local = threading.local()


def instance_locked(instance_id: str) -> Instance | None:
    """The instance with its row locked (not its broker's or workflow's), or None."""
    return instances_read(instance_ids=[instance_id], lock=True).get(instance_id)


def instance_fail(*, instance: Instance, event: str, reason: str, step: str = "", transaction: str = "") -> None:
    """A running instance fails: compensation begins (``instance_advance``). Caller holds the
    instance's row."""
    instance.state = InstanceState.COMPENSATING
    instance.reason = reason[:200]
    Instance.objects.filter(pk=instance.pk).update(state=instance.state, reason=instance.reason)
    history_add(instance=instance, event=event, step=step, transaction=transaction, detail=reason)


def advance_on_commit(instance_ids) -> None:
    """Advance these instances' sagas once the caller's database transaction commits."""
    ids = sorted(set(instance_ids))
    if ids:
        db.on_commit(lambda: instances_advance(instance_ids=ids))


def instances_advance(*, instance_ids) -> None:
    """``instance_advance`` for each; an advance that another one causes (a rollback's
    commit hook) joins the loop instead of nesting."""
    pending = getattr(_local, "pending", None)
    if pending is not None:
        pending.update(instance_ids)
        return
    _local.pending = set(instance_ids)
    try:
        while _local.pending:
            instance_id = _local.pending.pop()
            try:
                instance_advance(instance_id=instance_id)
            except Exception:  # the sweep tries again
                log.exception("workflow instance %s: the saga could not go on", instance_id)
    finally:
        _local.pending = None


def _open_completions(instance_id: str) -> list[str]:
    txns = list(
        InstanceStep.objects.filter(instance_id=instance_id, state=StepState.IN_FLIGHT)
        .exclude(transaction="")
        .values_list("transaction", flat=True)
    )
    return list(Transaction.objects.filter(pk__in=txns, state__in=OPEN_STATES).values_list("pk", flat=True))


def instance_advance(*, instance_id: str) -> str | None:
    """Issue the instance's next compensation if it is compensating and nothing is out.
    Returns the step whose compensation was requested, if any."""
    if not Instance.objects.filter(pk=instance_id, state=InstanceState.COMPENSATING).exists():
        return None
    for transaction_id in sorted(_open_completions(instance_id)):
        transaction_rollback(
            transaction_id=transaction_id, reason=f"workflow instance {instance_id} is compensating", require_open=False
        )
    with engine_step(durable=True):
        instance = instance_locked(instance_id)
        if instance is None or instance.state != InstanceState.COMPENSATING:
            return None
        steps = list(InstanceStep.objects.select_for_update().filter(instance=instance))
        if any(s.state in (StepState.COMPENSATING, StepState.IN_FLIGHT) for s in steps):
            return None  # one compensation at a time; a step still in flight resolves first
        return compensation_next(instance=instance, steps=steps)


def compensation_next(*, instance: Instance, steps: list[InstanceStep]) -> str | None:
    """Put the compensation request of the newest committed step, or end the instance
    ``compensated`` when none is left; returns the step. Caller holds the compensating
    instance's row and its steps' rows (``steps``: none in flight, no compensation out): in
    the database transaction of the commit that reported the last compensation done
    (``WorkflowStore``), or ``instance_advance``'s."""
    committed = [s for s in steps if s.state == StepState.COMMITTED]
    if not committed:
        Instance.objects.filter(pk=instance.pk).update(state=InstanceState.COMPENSATED, ended_at=timezone.now())
        history_add(instance=instance, event=HistoryEvent.COMPENSATED)
        return None
    step = max(committed, key=lambda s: (s.commit_order or 0, s.position))
    compensation_request(instance=instance, step=step)
    return step.name


def compensation_request(*, instance: Instance, step: InstanceStep, resubmitted: bool = False) -> bool:
    """Put the step's compensation request (its recorded compensation input). A put that is
    refused (the queue full, disabled or gone) leaves the instance ``compensation_failed``.
    Caller holds the instance's and the step's rows."""
    definition = instance_steps(instance)[step.name]
    InstanceStep.objects.filter(pk=step.pk).update(state=StepState.COMPENSATING, compensation_transaction="")
    try:
        with db.atomic():
            request_put(
                instance=instance,
                workflow_name=instance.workflow.name,
                step=step.name,
                queue=definition.compensation_queue,
                message=message_from_fields(step.compensation),
                compensation=True,
            )
    except BatonError as exc:
        Instance.objects.filter(pk=instance.pk).update(state=InstanceState.COMPENSATION_FAILED)
        history_add(
            instance=instance,
            event=HistoryEvent.COMPENSATION_FAILED,
            step=step.name,
            detail=f"the compensation request could not be put on {definition.compensation_queue!r}: {exc.message}",
        )
        return False
    history_add(
        instance=instance,
        step=step.name,
        detail=f"on {definition.compensation_queue}",
        event=HistoryEvent.COMPENSATION_RESUBMITTED if resubmitted else HistoryEvent.COMPENSATION_REQUESTED,
    )
    return True


def requests_gone(*, limit: int = 500) -> list[str]:
    """Open requests (committed puts on local queues) that are no longer on their queue although their step
    has not consumed them: dead-lettered through a peek-lock, expired, or got and committed
    by a worker that never completed the step. A step request's instance fails; a
    compensation request's waits for a person (``compensation_failed``). Returns the
    instances that failed."""
    requests = list(
        StepRequest.objects.filter(
            open=True, put_transaction="", instance__state__in=[InstanceState.RUNNING, InstanceState.COMPENSATING]
        )
        .select_related("instance__broker")
        .order_by("put_at")[:limit]
    )
    by_broker: dict[str, list[StepRequest]] = {}
    for r in requests:
        by_broker.setdefault(r.instance.broker.name, []).append(r)
    gone = []
    for broker, rows in by_broker.items():
        local = set(
            Queue.objects.filter(
                broker__name=broker, kind=QueueKind.LOCAL, name__in={r.queue for r in rows}
            ).values_list("name", flat=True)
        )
        rows = [r for r in rows if r.queue in local]  # through an alias or a channel it is elsewhere
        found = messages_where(broker=broker, queues=[r.queue for r in rows], msg_ids=[r.msg_id for r in rows])
        gone += [r for r in rows if r.msg_id not in found]
    failed = []
    for request in gone:
        with engine_step(durable=True):
            instance = instance_locked(request.instance_id)
            if instance is None or not StepRequest.objects.filter(pk=request.pk, open=True).exists():
                continue
            if messages_where(broker=instance.broker.name, queues=[request.queue], msg_ids=[request.msg_id]):
                continue  # back meanwhile (a rollback): not gone
            StepRequest.objects.filter(pk=request.pk).update(open=False)
            detail = f"request {request.msg_id} is no longer on {request.queue} and its step did not consume it"
            if request.compensation:
                if instance.state == InstanceState.COMPENSATING:
                    Instance.objects.filter(pk=instance.pk).update(state=InstanceState.COMPENSATION_FAILED)
                history_add(instance=instance, event=HistoryEvent.COMPENSATION_FAILED, step=request.step, detail=detail)
            elif instance.state == InstanceState.RUNNING:
                instance_fail(
                    instance=instance, event=HistoryEvent.REQUEST_DEAD_LETTERED, step=request.step, reason=detail
                )
                failed.append(instance.pk)
    return failed


def workflows_sweep(*, limit: int = 200) -> dict[str, int]:
    """What housekeeping does for workflows: instances past their deadline fail (reason
    ``deadline``), requests gone from their queues without their step fail their instance
    (``requests_gone``), and every compensating instance's saga is advanced (after a process
    died between a commit and its advance)."""
    gone = requests_gone()
    now = timezone.now()
    overdue = []
    for instance_id, progress_at, deadline_ms in (
        Instance.objects.filter(state=InstanceState.RUNNING, start_transaction="", version__deadline_ms__gt=0)
        .order_by("progress_at")
        .values_list("pk", "progress_at", "version__deadline_ms")[:limit]
    ):
        if progress_at + timedelta(milliseconds=deadline_ms) <= now:
            overdue.append(instance_id)
    failed = []
    for instance_id in overdue:
        with engine_step(durable=True):
            instance = instance_locked(instance_id)
            if instance is None or instance.state != InstanceState.RUNNING or instance.start_transaction:
                continue
            deadline_ms = instance.version.deadline_ms
            if instance.progress_at + timedelta(milliseconds=deadline_ms) > timezone.now():
                continue
            instance_fail(instance=instance, event=HistoryEvent.DEADLINE, reason="deadline")
            failed.append(instance_id)
    compensating = list(Instance.objects.filter(state=InstanceState.COMPENSATING).values_list("pk", flat=True)[:limit])
    instances_advance(instance_ids=sorted(set(failed) | set(gone) | set(compensating)))
    return {"deadline": len(failed), "gone": len(gone), "advanced": len(set(failed) | set(gone) | set(compensating))}

"""Instances: start, step completion, fail, compensated, abort and resubmit (docs/api.md,
"Workflows").

Locking: the unit of work's row (``unit_of_work_joined``, which also checks that it is the
caller's: anyone else's is 404 as for units of work), then the workflow's or the instances'
rows (in id order), then their steps' rows (in (instance, position) order), then the queue
rows of the requests put (``requests_put``: one ``message_put`` per queue, in (broker, queue)
order). The statements are in ``workflows.queries``, each with the locks it takes. The
effects that wait for a unit of work (a step counts as committed, a fail, a compensation
done) are applied by the resource manager (``workflows.services.store``) when it commits,
and undone when it rolls back.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.utils import timezone

from brokers import permissions as may
from brokers.ids import ids_new
from brokers.selectors import broker_get
from brokers.services.message_input import MessageInput
from brokers.services.messages.common import unit_of_work_joined
from transactions import queries as txn_queries
from transactions.durability import engine_step
from transactions.manager import transaction_commit, transaction_mark, transaction_timeouts_applied
from transactions.models import Transaction, TransactionState

from baton_client.errors import WorkflowConflict
from .. import queries
from ..exceptions import InstanceNotFound, StepNotFound, WorkflowNotFound
from ..models import (
    HistoryEvent,
    Instance,
    InstanceState,
    InstanceStep,
    StepRequest,
    StepState,
)
from .history import history_add
from .requests import Request, message_fields, request_put, requests_put
from .versions import instance_steps, version_steps
from .saga import compensation_next, compensation_request, instance_advance, instance_fail

#: The transaction mark of a unit of work with workflow effects waiting for its commit.
MARK_WORKFLOWS = "workflows"


def _instance_read(instance_id: str) -> Instance:
    return _instances_read({instance_id})[instance_id]


def _instances_read(instance_ids: set[str], *, lock: bool = False) -> dict[str, Instance]:
    """The instances (``lock``: their rows locked, in id order), in one query; an unknown id
    is InstanceNotFound."""
    instances = queries.instances_read(instance_ids=instance_ids, lock=lock)
    for instance_id in sorted(set(instance_ids) - instances.keys())[:1]:
        raise InstanceNotFound(f"No workflow instance {instance_id}.", instance=instance_id)
    return instances


def _locked(instance_id: str) -> Instance:
    return _instances_read({instance_id}, lock=True)[instance_id]


def _steps_locked(
    *, instances: dict[str, Instance], completions: list[Completion]
) -> dict[tuple[str, str], InstanceStep]:
    """The step rows the completions name (``Completion``: instance and step), in one query,
    in (instance, position) order; each row's ``instance`` is the locked one given."""
    rows = queries.steps_locked(instances=instances, names={c.step for c in completions})
    for c in completions:
        if (c.instance_id, c.step) not in rows:
            instance = instances[c.instance_id]
            raise StepNotFound(
                f"Workflow {instance.workflow.name!r} (version of instance {instance.pk}) has no step {c.step!r}.",
                instance=instance.pk,
                step=c.step,
            )
    return rows


def _step_locked(instance: Instance, step: str) -> InstanceStep:
    return _steps_locked(instances={instance.pk: instance}, completions=[Completion(instance.pk, step)])[
        (instance.pk, step)
    ]


def _running_checked(instance: Instance, doing: str) -> None:
    if instance.state != InstanceState.RUNNING:
        raise WorkflowConflict(
            f"Cannot {doing}: instance {instance.pk} is {instance.state}.", instance=instance.pk, state=instance.state
        )


def _user(user):
    return user if getattr(user, "pk", None) is not None else None


def instance_start(
    *, broker: str, name: str, message: MessageInput | None = None, transaction_id: str | None = None, user=None
) -> Instance:
    """Start an instance of the workflow's current version: put its first step's request
    (``message`` with ``workflow`` among its properties), under ``transaction_id`` if given
    (the instance then starts only if that unit of work commits; if it rolls back, the
    instance never was)."""
    with transaction_timeouts_applied(), engine_step(durable=transaction_id is None):
        txn = unit_of_work_joined(transaction_id=transaction_id, broker=broker, user=user) if transaction_id else None
        workflow = queries.workflow_current(broker=broker, name=name, lock=True)
        if workflow is None:
            broker_get(name=broker)
            raise WorkflowNotFound(f"No workflow {name!r} on broker {broker!r}.", broker=broker, workflow=name)
        version = workflow.current
        steps = list(version_steps(version).values())
        now = timezone.now()
        instance = Instance(
            id=ids_new(1)[0],
            broker=workflow.broker,
            workflow=workflow,
            version=version,
            state=InstanceState.RUNNING,
            start_transaction=transaction_id or "",
            started_at=now,
            progress_at=now,
            user=_user(user),
        )
        queries.instance_insert(instance=instance, steps=[(s.position, s.name) for s in steps])
        request_put(
            instance=instance,
            workflow_name=workflow.name,
            step=steps[0].name,
            queue=steps[0].queue,
            message=message,
            transaction_id=transaction_id,
            user=user,
        )
        history_add(
            instance=instance,
            event=HistoryEvent.STARTED,
            transaction=transaction_id or "",
            detail=f"version {version.version}",
        )
        if txn is not None:
            transaction_mark(transaction=txn, mark=MARK_WORKFLOWS)
    return instance


def _requests_held(
    *, instance: Instance, step: str, transaction_id: str, compensation: bool, needed: int, requests: list
) -> None:
    """The unit of work must have got every open request of the step (a join step: one from
    each predecessor), else WorkflowConflict. ``requests``: the step's open requests, each
    (msg_id, got under the unit of work), as ``queries.requests_gotten`` found them."""
    what = "compensation request" if compensation else "request"
    if len(requests) < needed:
        raise WorkflowConflict(
            f"Step {step!r} of instance {instance.pk} waits for its inputs: {len(requests)} of {needed} have been put.",
            instance=instance.pk,
            step=step,
        )
    missing = sorted(msg_id for msg_id, gotten in requests if not gotten)
    if missing:
        raise WorkflowConflict(
            f"Unit of work {transaction_id} has not got step {step!r}'s {what}(s) {', '.join(missing)}: get them "
            "under it first (a join step takes all its inputs in one unit of work).",
            instance=instance.pk,
            step=step,
            missing=missing,
        )


@dataclass(frozen=True)
class Completion:
    """One step's completion among those a unit of work reports at once (``steps_complete``)."""

    instance_id: str
    step: str
    output: MessageInput | None = None
    compensation: MessageInput | None = None


def step_complete(
    *,
    instance_id: str,
    step: str,
    transaction_id: str,
    output: MessageInput | None = None,
    compensation: MessageInput | None = None,
    commit: bool = False,
    wait: float = 0,
    user=None,
) -> InstanceStep:
    """Complete a step in the unit of work that got its request(s): put the next step(s)'
    requests with ``output`` and record ``compensation`` as the step's compensation input,
    all in that unit of work. The step counts as committed when it commits, and not at all
    if it rolls back. ``compensation`` is checked as ``user``'s put of it would be (its
    report options, ``msg_type``: docs/permissions.md), for Baton puts it later without a
    user.

    ``commit``: then commit the unit of work, in the same database transaction (the step is
    ``committed`` when this returns, or ``held`` while an upstream unit of work it took a
    request from pre-emptively is open: the commit then happens with that one's, and this
    call waits up to ``wait`` seconds for it, as ``transaction_commit`` does). A refused
    completion commits nothing."""
    completion = Completion(instance_id=instance_id, step=step, output=output, compensation=compensation)
    return steps_complete(transaction_id=transaction_id, completions=[completion], commit=commit, wait=wait, user=user)[
        0
    ]


def steps_complete(
    *, transaction_id: str, completions: list[Completion], commit: bool = False, wait: float = 0, user=None
) -> list[InstanceStep]:
    """Complete several steps (of one instance each, or of several) in the unit of work that
    got their requests, as ``step_complete`` completes one, all in one database transaction
    (with the commit, if ``commit``): a worker's batch of requests reported in one call. All
    or nothing: one refused completion (its instance no longer running, ...) refuses them
    all. The rows answered are in the order of ``completions``."""
    instances = _instances_read({c.instance_id for c in completions})
    compensations: dict[str, list[MessageInput]] = {}
    for c in completions:
        if c.compensation is not None:
            compensations.setdefault(instances[c.instance_id].broker.name, []).append(c.compensation)
    for broker, messages in compensations.items():
        may.require_put_fields(user, broker=broker, messages=messages)
    order = sorted(range(len(completions)), key=lambda i: (completions[i].instance_id, completions[i].step))
    done: list[InstanceStep | None] = [None] * len(completions)

    def each(locked: Transaction | None) -> None:
        # the unit of work's row, then the instances' rows in id order, then their steps', each in one query
        first = instances[completions[order[0]].instance_id].broker.name
        locked = unit_of_work_joined(transaction_id=transaction_id, broker=first, user=user, locked=locked)
        rows = _steps_locked(instances=_instances_read(set(instances), lock=True), completions=completions)
        requests = queries.requests_gotten(instance_ids=instances, transaction_id=transaction_id, compensation=False)
        puts: list[Request] = []
        for i in order:
            c = completions[i]
            row = rows[(c.instance_id, c.step)]
            broker = row.instance.broker.name
            locked = unit_of_work_joined(transaction_id=transaction_id, broker=broker, user=user, locked=locked)
            done[i] = _completed(
                instance=row.instance,
                txn=locked,
                row=row,
                output=c.output,
                compensation=c.compensation,
                requests=requests.get((c.instance_id, c.step), []),
                puts=puts,
            )
        requests_put(requests=puts, transaction_id=transaction_id, user=user)

    if not commit:
        with transaction_timeouts_applied(), engine_step(durable=False):
            each(None)
        return done  # type: ignore[return-value]
    # in the commit's database transaction, the unit of work's row locked
    outcome = transaction_commit(transaction_id=transaction_id, wait=wait, first=each)
    state = StepState.COMMITTED if outcome.state == TransactionState.COMMITTED else StepState.HELD
    for row in done:
        row.state = state
    return done  # type: ignore[return-value]


def _completed(
    *, instance: Instance, txn: Transaction, row: InstanceStep, output, compensation, requests: list, puts: list
) -> InstanceStep:
    """The completion itself (``requests``: the step's open requests, ``_requests_held``);
    the next steps' requests are added to ``puts``, for the caller to put with the others of
    its batch. Caller holds the unit of work's row, the instance's and the step's."""
    transaction_id, step = txn.pk, row.name
    _running_checked(instance, f"complete step {step!r}")
    if row.state == StepState.IN_FLIGHT:
        where = "this" if row.transaction == transaction_id else f"another ({row.transaction})"
        raise WorkflowConflict(
            f"Step {step!r} of instance {instance.pk} was already completed under {where} unit of work.",
            instance=instance.pk,
            step=step,
            state=row.state,
        )
    if row.state not in (StepState.PENDING, StepState.BACKED_OUT):
        raise WorkflowConflict(
            f"Step {step!r} of instance {instance.pk} is {row.state}: it was already completed.",
            instance=instance.pk,
            step=step,
            state=row.state,
        )
    steps = step_definitions(instance)
    definition = steps[step]
    _requests_held(
        instance=instance,
        step=step,
        transaction_id=transaction_id,
        compensation=False,
        needed=max(1, len(definition.predecessors)),
        requests=requests,
    )
    for name in definition.successors:
        puts.append(
            Request(
                instance=instance,
                workflow_name=instance.workflow.name,
                step=name,
                queue=steps[name].queue,
                message=output,
                source=step,
                inputs=max(1, len(steps[name].predecessors)),
            )
        )
    row.state, row.transaction = StepState.IN_FLIGHT, transaction_id
    row.compensation = message_fields(compensation)
    txn_queries.deferred(
        f'UPDATE workflows_instancestep SET state = %s, "transaction" = %s, compensation = {txn_queries.json_param()} '
        "WHERE id = %s",
        [row.state, row.transaction, json.dumps(row.compensation), row.pk],
    )
    history_add(instance=instance, event=HistoryEvent.STEP_COMPLETED, step=step, transaction=transaction_id)
    transaction_mark(transaction=txn, mark=MARK_WORKFLOWS)
    return row


def step_fail(
    *, instance_id: str, step: str, reason: str = "", transaction_id: str | None = None, user=None
) -> Instance:
    """A step reports failure: the instance fails and compensation begins, at once or, under
    ``transaction_id``, when that unit of work commits (nothing if it rolls back)."""
    instance = _instance_read(instance_id)
    reason = reason or "failed"
    if transaction_id:
        with transaction_timeouts_applied(), engine_step(durable=False):
            txn = unit_of_work_joined(transaction_id=transaction_id, broker=instance.broker.name, user=user)
            instance = _locked(instance_id)
            row = _step_locked(instance, step)
            _running_checked(instance, f"fail step {step!r}")
            InstanceStep.objects.filter(pk=row.pk).update(fail_transaction=transaction_id, fail_reason=reason[:200])
            transaction_mark(transaction=txn, mark=MARK_WORKFLOWS)
        return instance
    with engine_step(durable=True):
        instance = _locked(instance_id)
        _step_locked(instance, step)
        _running_checked(instance, f"fail step {step!r}")
        instance_fail(instance=instance, event=HistoryEvent.STEP_FAILED, step=step, reason=reason)
    instance_advance(instance_id=instance_id)
    return _instance_read(instance_id)


def step_compensated(
    *, instance_id: str, step: str, transaction_id: str, commit: bool = False, wait: float = 0, user=None
) -> InstanceStep:
    """The step's compensation is done when this unit of work (which got its compensation
    request) commits; the next compensation is then issued. ``commit``: then commit the unit
    of work in the same database transaction (as ``step_complete`` does)."""
    if commit:
        done: list[InstanceStep] = []

        def first(locked: Transaction) -> None:
            instance = _locked(instance_id)
            txn = unit_of_work_joined(
                transaction_id=transaction_id, broker=instance.broker.name, user=user, locked=locked
            )
            done[:] = [_compensation_reported(instance=instance, txn=txn, step=step)]

        outcome = transaction_commit(transaction_id=transaction_id, wait=wait, first=first)
        row = done[0]
        if outcome.state == TransactionState.COMMITTED:
            row.state = StepState.COMPENSATED
        return row
    instance = _instance_read(instance_id)
    with transaction_timeouts_applied(), engine_step(durable=False):
        txn = unit_of_work_joined(transaction_id=transaction_id, broker=instance.broker.name, user=user)
        instance = _locked(instance_id)
        return _compensation_reported(instance=instance, txn=txn, step=step)


def _compensation_reported(*, instance: Instance, txn: Transaction, step: str) -> InstanceStep:
    """Caller holds the unit of work's row and the instance's."""
    transaction_id = txn.pk
    row = _step_locked(instance, step)
    if row.state in (StepState.PENDING, StepState.IN_FLIGHT, StepState.BACKED_OUT):
        raise WorkflowConflict(
            f"Step {step!r} of instance {instance.pk} never committed: it has no compensation.",
            instance=instance.pk,
            step=step,
            state=row.state,
        )
    if row.state == StepState.COMPENSATED:
        raise WorkflowConflict(
            f"Step {step!r} of instance {instance.pk} was already compensated.",
            instance=instance.pk,
            step=step,
            state=row.state,
        )
    if row.state == StepState.COMMITTED:
        raise WorkflowConflict(
            f"Step {step!r} of instance {instance.pk} has no compensation requested.",
            instance=instance.pk,
            step=step,
            state=row.state,
        )
    if row.compensation_transaction:
        where = "this" if row.compensation_transaction == transaction_id else "another"
        raise WorkflowConflict(
            f"The compensation of step {step!r} of instance {instance.pk} was already reported "
            f"under {where} unit of work.",
            instance=instance.pk,
            step=step,
        )
    requests = queries.requests_gotten(instance_ids=[instance.pk], transaction_id=transaction_id, compensation=True)
    _requests_held(
        instance=instance,
        step=step,
        transaction_id=transaction_id,
        compensation=True,
        needed=1,
        requests=requests.get((instance.pk, step), []),
    )
    row.compensation_transaction = transaction_id
    InstanceStep.objects.filter(pk=row.pk).update(compensation_transaction=transaction_id)
    transaction_mark(transaction=txn, mark=MARK_WORKFLOWS)
    return row


def workflow_abort(*, instance_id: str, reason: str = "", user=None) -> Instance:
    """Abort a running instance: its steps in flight are backed out and its committed steps
    compensated, newest first."""
    _instance_read(instance_id)
    with engine_step(durable=True):
        instance = _locked(instance_id)
        _running_checked(instance, "abort")
        instance_fail(instance=instance, event=HistoryEvent.ABORTED, reason=reason or "aborted")
        steps = list(InstanceStep.objects.select_for_update().filter(instance=instance))
        in_flight = any(s.state == StepState.IN_FLIGHT for s in steps)
        if not in_flight:  # the first compensation goes with the abort
            compensation_next(instance=instance, steps=steps)
    if in_flight:  # rolled back first (instance_advance), then the first compensation
        instance_advance(instance_id=instance_id)
    return _instance_read(instance_id)


def compensation_resubmit(*, instance_id: str, user=None) -> Instance:
    """Put a failed compensation's request again (from the compensation input recorded when
    its step committed); the instance is compensating again."""
    _instance_read(instance_id)
    with engine_step(durable=True):
        instance = _locked(instance_id)
        if instance.state != InstanceState.COMPENSATION_FAILED:
            raise WorkflowConflict(
                f"Instance {instance.pk} is {instance.state}: only a failed compensation can be resubmitted.",
                instance=instance.pk,
                state=instance.state,
            )
        row = InstanceStep.objects.select_for_update().filter(instance=instance, state=StepState.COMPENSATING).first()
        if row is None:
            raise WorkflowConflict(f"Instance {instance.pk} has no failed compensation.", instance=instance.pk)
        StepRequest.objects.filter(instance=instance, step=row.name, compensation=True, open=True).update(open=False)
        Instance.objects.filter(pk=instance.pk).update(state=InstanceState.COMPENSATING)
        instance.state = InstanceState.COMPENSATING
        compensation_request(instance=instance, step=row, resubmitted=True)
    return _instance_read(instance_id)


def step_definitions(instance: Instance) -> dict[str, Any]:
    return instance_steps(instance)

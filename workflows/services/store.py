"""The resource manager for workflows, registered with the transaction manager
(workflows.apps) ahead of the message store. A step's state follows its unit of work:

- at commit, a step completed under it is ``committed`` (steps committing together are
  ordered by their place in the workflow), an instance started under it starts, a fail
  under it fails the instance, a compensation reported under it is done; the saga then
  goes on (``advance_on_commit``);
- at rollback, they are undone: the step is ``backed_out`` (its request goes back to its
  queue with the message store's rollback), an instance started under it never was. And
  any step or compensation request the unit of work had got that this backout takes past
  its queue's backout threshold (so the message store moves it to the backout or
  dead-letter queue, or leaves it there backed out too often) fails the instance, or
  leaves it ``compensation_failed``.

Units of work that touched no workflow cost one query at rollback (what they had got) and
nothing at commit.
"""

from __future__ import annotations

from collections import defaultdict

from django.utils import timezone

from brokers.selectors import messages_gotten
from transactions import queries as txn_queries

from .. import queries
from ..queries import instances_read
from ..models import HistoryEvent, Instance, InstanceState, InstanceStep, StepRequest, StepState
from .history import history_add
from .instances import MARK_WORKFLOWS
from .saga import advance_on_commit, compensation_next, instance_fail
from .versions import instance_steps


def _instances_locked(ids) -> dict[str, Instance]:
    return instances_read(instance_ids=ids, lock=True)


class WorkflowStore:
    def resources_commit(self, *, transaction_ids: list[str], marks: set[str]) -> None:
        if MARK_WORKFLOWS not in marks:
            return
        now = timezone.now()
        at = txn_queries.dt_param(now)
        started, touched = queries.commit_settles(transaction_ids=transaction_ids)
        ids = set(transaction_ids)
        completing = [s for s in touched if s.transaction in ids and s.state == StepState.IN_FLIGHT]
        failing = [s for s in touched if s.fail_transaction in ids]
        compensated = [s for s in touched if s.compensation_transaction in ids and s.state == StepState.COMPENSATING]
        instances = _instances_locked([*started, *(s.instance_id for s in touched)])
        queries.commit_settled(transaction_ids=transaction_ids, started=started, at=at)
        advance = set()
        by_instance = defaultdict(list)
        for step in completing:
            by_instance[step.instance_id].append(step)
        for instance_id, steps in by_instance.items():
            instance = instances[instance_id]
            for step in sorted(steps, key=lambda s: s.position):
                instance.commits += 1
                txn_queries.deferred(queries.STEP_COMMITTED, [StepState.COMMITTED, instance.commits, at, step.pk])
                txn_queries.deferred(queries.REQUESTS_CLOSED, [False, instance_id, step.name, False, True])
                history_add(
                    instance=instance, event=HistoryEvent.STEP_COMMITTED, step=step.name, transaction=step.transaction
                )
            # each step commits once while the instance runs: it is complete when it has as many commits as steps
            if instance.state == InstanceState.RUNNING and instance.commits >= len(instance_steps(instance)):
                instance.state = InstanceState.COMPLETED
                txn_queries.deferred(queries.INSTANCE_ENDED, [instance.commits, at, instance.state, at, instance_id])
                history_add(instance=instance, event=HistoryEvent.COMPLETED)
            else:
                if instance.state != InstanceState.RUNNING:
                    advance.add(instance_id)  # committed while compensating: it is compensated too
                txn_queries.deferred(queries.INSTANCE_PROGRESSED, [instance.commits, at, instance_id])
        for step in failing:
            instance = instances[step.instance_id]
            txn_queries.deferred(queries.STEP_FAIL_SETTLED, [step.pk])
            txn_queries.deferred(queries.REQUESTS_CLOSED, [False, instance.pk, step.name, False, True])
            if instance.state == InstanceState.RUNNING:
                instance_fail(
                    instance=instance,
                    event=HistoryEvent.STEP_FAILED,
                    step=step.name,
                    transaction=step.fail_transaction,
                    reason=step.fail_reason,
                )
                advance.add(instance.pk)
        following = set()
        for step in compensated:
            instance = instances[step.instance_id]
            txn_queries.deferred(queries.STEP_COMPENSATED, [StepState.COMPENSATED, at, step.pk])
            txn_queries.deferred(queries.REQUESTS_CLOSED, [False, instance.pk, step.name, True, True])
            history_add(
                instance=instance,
                event=HistoryEvent.STEP_COMPENSATED,
                step=step.name,
                transaction=step.compensation_transaction,
            )
            if instance.state == InstanceState.COMPENSATION_FAILED:  # done by hand after all
                instance.state = InstanceState.COMPENSATING
                txn_queries.deferred(queries.INSTANCE_STATE, [instance.state, instance.pk])
            following.add(instance.pk)
        if following - advance:
            txn_queries.deferred_flush()  # the steps' rows read next through the ORM
        for instance_id in sorted(following - advance):
            # the next compensation in this commit's own database transaction, unless a step
            # is still in flight (rolled back first, after this commit: advance_on_commit)
            instance = instances[instance_id]
            steps = list(InstanceStep.objects.select_for_update().filter(instance_id=instance_id))
            if instance.state != InstanceState.COMPENSATING:
                continue
            if any(s.state == StepState.IN_FLIGHT for s in steps):
                advance.add(instance_id)
            elif not any(s.state == StepState.COMPENSATING for s in steps):
                compensation_next(instance=instance, steps=steps)
        advance_on_commit(advance)

    def resources_rollback(self, *, transaction_id: str, reason: str, marks: set[str]) -> None:
        advance = self._past_threshold(transaction_id)
        if MARK_WORKFLOWS in marks:
            advance |= self._undone(transaction_id, reason)
        advance_on_commit(advance)

    @staticmethod
    def _undone(transaction_id: str, reason: str) -> set[str]:
        Instance.objects.filter(start_transaction=transaction_id).delete()  # it never started
        backed_out = list(InstanceStep.objects.filter(transaction=transaction_id, state=StepState.IN_FLIGHT))
        touched = {s.instance_id for s in backed_out}
        touched |= set(
            InstanceStep.objects.filter(fail_transaction=transaction_id).values_list("instance_id", flat=True)
        )
        touched |= set(
            InstanceStep.objects.filter(compensation_transaction=transaction_id).values_list("instance_id", flat=True)
        )
        instances = _instances_locked(touched)
        for step in backed_out:
            InstanceStep.objects.filter(pk=step.pk).update(state=StepState.BACKED_OUT, compensation=None)
            history_add(
                instance=step.instance_id,
                event=HistoryEvent.STEP_BACKED_OUT,
                step=step.name,
                transaction=transaction_id,
                detail=reason,
            )
        StepRequest.objects.filter(put_transaction=transaction_id).delete()
        InstanceStep.objects.filter(fail_transaction=transaction_id).update(fail_transaction="", fail_reason="")
        InstanceStep.objects.filter(compensation_transaction=transaction_id).update(compensation_transaction="")
        return {i for i, instance in instances.items() if instance.state == InstanceState.COMPENSATING}

    @staticmethod
    def _past_threshold(transaction_id: str) -> set[str]:
        """Requests this rollback takes past their queue's backout threshold (the message
        store then moves them, or leaves them backed out too often)."""
        gotten = [
            m
            for m in messages_gotten(transaction_id=transaction_id)
            if not m["locked"] and m["backout_threshold"] and m["backout_count"] + 1 >= m["backout_threshold"]
        ]
        if not gotten:
            return set()
        counts = {m["msg_id"]: (m["backout_count"] + 1, m["backout_threshold"]) for m in gotten}
        requests = list(StepRequest.objects.filter(open=True, msg_id__in=list(counts)))
        if not requests:
            return set()
        instances = _instances_locked(r.instance_id for r in requests)
        advance = set()
        for request in requests:
            instance = instances[request.instance_id]
            StepRequest.objects.filter(pk=request.pk).update(open=False)
            count, threshold = counts[request.msg_id]
            detail = f"request {request.msg_id} on {request.queue} backed out {count} times (threshold {threshold})"
            if request.compensation:
                if instance.state == InstanceState.COMPENSATING:
                    Instance.objects.filter(pk=instance.pk).update(state=InstanceState.COMPENSATION_FAILED)
                    instance.state = InstanceState.COMPENSATION_FAILED
                history_add(
                    instance=instance,
                    event=HistoryEvent.COMPENSATION_FAILED,
                    step=request.step,
                    transaction=transaction_id,
                    detail=detail,
                )
            elif instance.state == InstanceState.RUNNING:
                instance_fail(
                    instance=instance,
                    event=HistoryEvent.REQUEST_DEAD_LETTERED,
                    step=request.step,
                    transaction=transaction_id,
                    reason=detail,
                )
                advance.add(instance.pk)
        return advance

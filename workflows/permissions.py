"""Who may do what with workflows (REST and the session).

=====================================  =========================================================
request                                needs
=====================================  =========================================================
list, display workflows; find,         any action on the broker (broker-wide or on a queue of it)
display instances
define, alter, delete a workflow;      admin on the whole broker; a step or compensation queue that
resubmit a failed compensation         is an alias or a remote queue: also put (or admin) where it
                                       finally leads (workflow_define, workflow_alter)
start an instance; abort one           put on the queue of the workflow's first step (a start
                                       puts there); the same as a direct put
complete a step (or several at once,  put on each queue its completion puts a request on; its
steps_complete)                        compensation input as the completer's put of it
                                       (step_complete: brokers.permissions.require_put_fields)
fail a step                            get on the step's queue (its worker got the request)
report a compensation done             get on the step's compensation queue
=====================================  =========================================================

An instance is addressed by its id alone: to a user without any grant on its broker it is
not confirmed to exist (404, as for an unknown id). Units of work named in these requests
follow the ownership rule of units of work (docs/permissions.md): anyone else's is 404.
"""

from __future__ import annotations

from brokers import permissions as may

from .exceptions import InstanceNotFound
from .models import Instance, WorkflowStep
from . import queries
from .services.versions import instance_steps, version_steps

require_display = may.require_broker_display
require_admin = may.require_broker_admin


def _first_queue(*, broker: str, name: str) -> str | None:
    workflow = queries.workflow_current(broker=broker, name=name, lock=False)
    if workflow is None:
        return None  # the service answers 404
    return next(iter(version_steps(workflow.current).values())).queue


def require_start(user, *, broker: str, name: str) -> None:
    queue = _first_queue(broker=broker, name=name)
    if queue is None:
        require_display(user, broker=broker)
    else:
        may.require_put(user, broker=broker, queue=queue)


def instance_broker(user, *, instance_id: str) -> tuple[str, Instance]:
    """The instance's broker, once the user may see it: 404 for an unknown id and for an
    instance of a broker the user holds no grant on."""
    instance = queries.instances_read(instance_ids=[instance_id]).get(instance_id)
    if instance is None or not may._holds(user, may.ANY, broker=instance.broker.name, anywhere=True):
        raise InstanceNotFound(f"No workflow instance {instance_id}.", instance=instance_id)
    return instance.broker.name, instance


def _step(instance: Instance, step: str) -> WorkflowStep | None:
    return instance_steps(instance).get(step)


def require_complete(user, *, instance_id: str, step: str) -> None:
    broker, instance = instance_broker(user, instance_id=instance_id)
    definition = _step(instance, step)
    if definition is None:
        return  # the service answers 404
    steps = instance_steps(instance)
    for name in definition.successors:
        may.require_put(user, broker=broker, queue=steps[name].queue)


def require_complete_all(user, *, steps: list[tuple[str, str]]) -> None:
    """``require_complete`` for each (instance, step), the instances read in one query and
    each queue checked once."""
    found = queries.instances_read(instance_ids={instance for instance, _ in steps})
    checked: set[tuple[str, str]] = set()
    for instance_id, step in steps:
        instance = found.get(instance_id)
        if instance is None:
            raise InstanceNotFound(f"No workflow instance {instance_id}.", instance=instance_id)
        broker = instance.broker.name
        if (broker, "") not in checked:
            if not may._holds(user, may.ANY, broker=broker, anywhere=True):
                raise InstanceNotFound(f"No workflow instance {instance_id}.", instance=instance_id)
            checked.add((broker, ""))
        steps_of = instance_steps(instance)
        definition = steps_of.get(step)
        if definition is None:
            continue  # the service answers 404
        for name in definition.successors:
            if (broker, steps_of[name].queue) not in checked:
                may.require_put(user, broker=broker, queue=steps_of[name].queue)
                checked.add((broker, steps_of[name].queue))


def require_fail(user, *, instance_id: str, step: str) -> None:
    broker, instance = instance_broker(user, instance_id=instance_id)
    if (definition := _step(instance, step)) is not None:
        may.require_get(user, broker=broker, queue=definition.queue)


def require_compensated(user, *, instance_id: str, step: str) -> None:
    broker, instance = instance_broker(user, instance_id=instance_id)
    if (definition := _step(instance, step)) is not None:
        may.require_get(user, broker=broker, queue=definition.compensation_queue)


def require_abort(user, *, instance_id: str) -> None:
    broker, instance = instance_broker(user, instance_id=instance_id)
    require_start(user, broker=broker, name=instance.workflow.name)


def require_resubmit(user, *, instance_id: str) -> None:
    broker, _ = instance_broker(user, instance_id=instance_id)
    require_admin(user, broker=broker)


def require_instance_display(user, *, instance_id: str) -> None:
    instance_broker(user, instance_id=instance_id)

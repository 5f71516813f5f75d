"""Dashboard pages of workflows: a broker's workflows and instances (filters, counts by
state), and one instance live (its steps as a graph, held links, compensation path,
history; kept current by the dashboard's socket, consumers.WorkflowInstanceConsumer) with
its actions. Checks and services are workflows' own (workflows.permissions),
so the dashboard allows exactly what the API does."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from baton_client.errors import BatonError, InvalidInput
from workflows import permissions as wmay
from workflows.models import InstanceState
from workflows.selectors import (
    instance_counts,
    instance_get,
    instance_summary,
    instance_view,
    instances_find,
    workflow_list,
    workflow_view,
)
from workflows.services.instances import compensation_resubmit, workflow_abort

from .access import require_broker_seen
from .views import page

PAGE = 50


def _may(check, user, **kwargs) -> bool:
    try:
        check(user, **kwargs)
        return True
    except BatonError:
        return False


@page
def workflows_page(request, broker):
    require_broker_seen(request.user, broker=broker)
    state = request.GET.get("state") or None
    if state is not None and state not in InstanceState.values:
        raise InvalidInput("Unknown state.", errors={"state": [f"One of {', '.join(InstanceState.values)}."]})
    name = request.GET.get("workflow") or None
    step = request.GET.get("step") or None
    try:
        older = int(request.GET.get("older_than_s") or 0)
        offset = max(0, int(request.GET.get("offset") or 0))
    except ValueError:
        raise InvalidInput("older_than_s and offset are whole numbers.") from None
    count, rows = instances_find(
        broker=broker, name=name, state=state, older_than_ms=older * 1000 or None, step=step, limit=PAGE, offset=offset
    )
    return render(
        request,
        "dashboard/workflows.html",
        {
            "broker_name": broker,
            "nav": "overview",
            "may_admin": _may(wmay.require_admin, request.user, broker=broker),
            "workflows": [workflow_view(w) for w in workflow_list(broker=broker)],
            "counts": instance_counts(broker=broker),
            "states": InstanceState.values,
            "count": count,
            "instances": [instance_summary(i) for i in rows],
            "filters": {"state": state or "", "workflow": name or "", "step": step or "", "older_than_s": older},
            "offset": offset,
            "next_offset": offset + PAGE if offset + PAGE < count else None,
        },
    )


def _instance(request, instance_id: str):
    broker, _ = wmay.instance_broker(request.user, instance_id=instance_id)
    return broker, instance_get(instance_id=instance_id)


@page
def instance_page(request, instance_id):
    broker, instance = _instance(request, instance_id)
    view = instance_view(instance)
    return render(
        request,
        "dashboard/workflow_instance.html",
        {
            "broker_name": broker,
            "nav": "overview",
            "instance": view,
            "may_abort": view["state"] == InstanceState.RUNNING
            and _may(wmay.require_abort, request.user, instance_id=instance_id),
            "may_resubmit": view["state"] == InstanceState.COMPENSATION_FAILED
            and _may(wmay.require_resubmit, request.user, instance_id=instance_id),
        },
    )


@page
@require_POST
def instance_action(request, instance_id, action):
    if action == "abort":
        wmay.require_abort(request.user, instance_id=instance_id)
        result = workflow_abort(
            instance_id=instance_id, reason=request.POST.get("reason") or "aborted from the dashboard"
        )
    else:
        wmay.require_resubmit(request.user, instance_id=instance_id)
        result = compensation_resubmit(instance_id=instance_id)
    messages.success(request, f"Instance {instance_id[:12]}… is {result.state}.")
    return redirect("dashboard-workflow-instance", instance_id=instance_id)

"""REST views for workflows (docs/api.md, "Workflows"): each hands its request to one operation
(``workflows.api.operations``), as brokers.api.views does."""

from __future__ import annotations

from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from brokers.api import schema as doc
from brokers.api.operations.rest import operation_response as _run, request_query as _query

from . import operations as ops
from . import schema  # noqa: F401  (the path parameters)

TAG = "workflows"


class WorkflowListView(APIView):
    @doc.operation(ops.WorkflowList, "workflows_list", TAG, 400, 404, query=True)
    def get(self, request: Request, broker: str) -> Response:
        return _run(ops.WorkflowList, request, _query(request), broker=broker)

    @doc.operation(ops.WorkflowDefine, "workflows_define", TAG, 400, 404, 409)
    def post(self, request: Request, broker: str) -> Response:
        return _run(ops.WorkflowDefine, request, broker=broker)


class WorkflowDetailView(APIView):
    @doc.operation(ops.WorkflowDisplay, "workflows_display", TAG, 404)
    def get(self, request: Request, broker: str, name: str) -> Response:
        return _run(ops.WorkflowDisplay, request, {}, broker=broker, name=name)

    @doc.operation(ops.WorkflowAlter, "workflows_alter", TAG, 400, 404)
    def patch(self, request: Request, broker: str, name: str) -> Response:
        return _run(ops.WorkflowAlter, request, broker=broker, name=name)

    @doc.operation(ops.WorkflowDelete, "workflows_delete", TAG, 404, 409)
    def delete(self, request: Request, broker: str, name: str) -> Response:
        return _run(ops.WorkflowDelete, request, {}, broker=broker, name=name)


class InstanceListView(APIView):
    @doc.operation(ops.InstanceFind, "workflow_instances_find", TAG, 400, 404, query=True)
    def get(self, request: Request, broker: str, name: str) -> Response:
        return _run(ops.InstanceFind, request, _query(request), broker=broker, name=name)

    @doc.operation(ops.WorkflowStart, "workflow_instances_start", TAG, 400, 404, 409, 413)
    def post(self, request: Request, broker: str, name: str) -> Response:
        return _run(ops.WorkflowStart, request, broker=broker, name=name)


class InstanceDetailView(APIView):
    @doc.operation(ops.InstanceDisplay, "workflow_instances_display", TAG, 404)
    def get(self, request: Request, instance: str) -> Response:
        return _run(ops.InstanceDisplay, request, {}, instance=instance)


class StepCompleteView(APIView):
    @doc.operation(ops.StepComplete, "workflow_steps_complete", TAG, 400, 404, 409, 413)
    def post(self, request: Request, instance: str, step: str) -> Response:
        return _run(ops.StepComplete, request, instance=instance, step=step)


class StepFailView(APIView):
    @doc.operation(ops.StepFail, "workflow_steps_fail", TAG, 400, 404, 409)
    def post(self, request: Request, instance: str, step: str) -> Response:
        return _run(ops.StepFail, request, instance=instance, step=step)


class StepCompensatedView(APIView):
    @doc.operation(ops.StepCompensated, "workflow_steps_compensated", TAG, 400, 404, 409)
    def post(self, request: Request, instance: str, step: str) -> Response:
        return _run(ops.StepCompensated, request, instance=instance, step=step)


class AbortView(APIView):
    @doc.operation(ops.WorkflowAbort, "workflow_instances_abort", TAG, 400, 404, 409)
    def post(self, request: Request, instance: str) -> Response:
        return _run(ops.WorkflowAbort, request, instance=instance)


class ResubmitView(APIView):
    @doc.operation(ops.CompensationResubmit, "workflow_instances_resubmit", TAG, 400, 404, 409)
    def post(self, request: Request, instance: str) -> Response:
        return _run(ops.CompensationResubmit, request, instance=instance)

"""Workflow routes under /api/, made from the operations' definitions (the name and id
converters are brokers.api.urls')."""

import brokers.api.urls  # noqa: F401  (registers the converters)
from brokers.api.operations.rest import rest_urls

from . import operations as ops

urlpatterns = rest_urls(
    ops.InstanceFind,
    ops.WorkflowStart,
    ops.WorkflowDisplay,
    ops.WorkflowAlter,
    ops.WorkflowDelete,
    ops.WorkflowList,
    ops.WorkflowDefine,
    ops.StepComplete,
    ops.StepsComplete,
    ops.StepFail,
    ops.StepCompensated,
    ops.WorkflowAbort,
    ops.CompensationResubmit,
    ops.InstanceDisplay,
)

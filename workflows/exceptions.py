"""Errors of workflows (config.errors holds the hierarchy)."""

from baton_client.errors import NotEmpty, WorkflowConflict  # noqa: F401 - re-exported

from config.errors import NotFound


class WorkflowNotFound(NotFound):
    """No such workflow."""


class InstanceNotFound(NotFound):
    """No such workflow instance."""


class StepNotFound(NotFound):
    """No such step in the instance's workflow."""

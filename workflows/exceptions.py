"""Errors of workflows: the server's not-founds (the hierarchy is baton_client.errors)."""

from baton_client.errors import NotFound


class WorkflowNotFound(NotFound):
    """No such workflow."""


class InstanceNotFound(NotFound):
    """No such workflow instance."""


class StepNotFound(NotFound):
    """No such step in the instance's workflow."""

"""The path parameters of workflows' routes, for the OpenAPI schema."""

from brokers.api import schema

schema._PATH_PARAMETERS.update(
    {
        "name": schema._path("name", "Workflow name.", schema.PATH_NAME, "EXPENSES"),
        "instance": schema._path("instance", "Workflow instance id (48 hex characters).", schema.HEX48, "0" * 48),
        "step": schema._path("step", "Step name.", schema.PATH_NAME, "approve"),
    }
)

"""The path parameters of workflows' routes, for the OpenAPI schema."""

from brokers.api import schema

schema._PATH_PARAMETERS.update(
    {
        "name": schema.path_parameter("name", "Workflow name.", schema.PATH_NAME, "EXPENSES"),
        "instance": schema.path_parameter(
            "instance", "Workflow instance id (48 hex characters).", schema.HEX48, "0" * 48
        ),
        "step": schema.path_parameter("step", "Step name.", schema.PATH_NAME, "approve"),
    }
)

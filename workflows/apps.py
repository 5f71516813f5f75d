from django.apps import AppConfig


class WorkflowsConfig(AppConfig):
    name = "workflows"
    verbose_name = "Workflows"

    def ready(self) -> None:
        from transactions.resources import resource_manager_register

        from .api import operations  # noqa: F401  (registers the session's workflow operations)
        from .services.store import WorkflowStore

        # first: at a rollback it must see which step requests the unit of work had taken
        # before the message store gives them back (or moves them past their threshold)
        resource_manager_register(WorkflowStore(), first=True)

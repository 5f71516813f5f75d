from django.apps import AppConfig


class BrokersConfig(AppConfig):
    name = "brokers"
    verbose_name = "Brokers"

    def ready(self) -> None:
        from transactions.resources import resource_manager_register

        from .channels.api import receiving  # noqa: F401  (registers the session's batch_* operations)
        from .services.store import MessageStore

        resource_manager_register(MessageStore())

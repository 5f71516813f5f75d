from django.apps import AppConfig


class PubSubConfig(AppConfig):
    name = "pubsub"
    verbose_name = "Publish/subscribe"

    def ready(self) -> None:
        from transactions.resources import resource_manager_register

        from . import signals  # noqa: F401  (connects the receivers)
        from .api import operations  # noqa: F401  (registers the session's publish)
        from .services.store import PublicationStore

        resource_manager_register(PublicationStore())

from django.apps import AppConfig


class StompServerConfig(AppConfig):
    name = "stomp_server"
    verbose_name = "STOMP"
    default_auto_field = "django.db.models.BigAutoField"

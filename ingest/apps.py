from django.apps import AppConfig


class IngestConfig(AppConfig):
    name = "ingest"
    verbose_name = "Bulk ingest"
    default_auto_field = "django.db.models.BigAutoField"

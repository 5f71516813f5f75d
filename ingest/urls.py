"""Ingest routes (included before the brokers' routes: a queue name may contain '/')."""

from django.urls import path

from brokers.api import urls as _brokers_urls  # noqa: F401  (registers the name and id converters)

from .api import IngestDetailView, IngestProgressView, QueueIngestsView

urlpatterns = [
    path("brokers/<name:broker>/queues/<name:queue>/ingests/", QueueIngestsView.as_view(), name="queue-ingests"),
    path("ingests/<id:ingest_id>/progress/", IngestProgressView.as_view(), name="ingest-progress"),
    path("ingests/<id:ingest_id>/", IngestDetailView.as_view(), name="ingest-detail"),
]

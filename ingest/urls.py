"""Ingest routes, made from the operations' definitions (included before the brokers'
routes: a queue name may contain '/')."""

from brokers.api import urls as _brokers_urls  # noqa: F401  (registers the name and id converters)
from brokers.api.operations.rest import rest_urls

from . import api

urlpatterns = rest_urls(api.IngestStart, api.IngestList, api.IngestProgress, api.IngestDisplay)

"""Definitions routes under /api/, made from the operations' definitions."""

from brokers.api.operations.rest import rest_urls

from .api import DefinitionsApply, DefinitionsExport, DefinitionsPlan, DefinitionsSchema

urlpatterns = rest_urls(DefinitionsSchema, DefinitionsPlan, DefinitionsApply, DefinitionsExport)

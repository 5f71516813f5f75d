"""The console's definitions pages (superusers): download the definitions document, and
import one: its plan shown as a diff (dashboard/frontend/src/definitions.js asks
``POST /api/definitions/plan/``), then applied (``POST /api/definitions/apply/``). The
export is ``topology``'s own (docs/definitions.md)."""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import render

from topology.files import document_text
from topology.selectors import definitions_export

from .access import require_superuser
from .views import page


@page
def definitions_page(request):
    require_superuser(request.user)
    return render(request, "dashboard/definitions.html", {"nav": "definitions"})


@page
def definitions_download(request):
    """The document as a file: JSON, or YAML with ``?format=yaml``; every attribute with ``?all=1``."""
    require_superuser(request.user)
    yaml_form = request.GET.get("format") == "yaml"
    text = document_text(definitions_export(all=request.GET.get("all") == "1"), yaml_form=yaml_form)
    name = "baton-definitions.yaml" if yaml_form else "baton-definitions.json"
    response = HttpResponse(text, content_type="application/yaml" if yaml_form else "application/json")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response

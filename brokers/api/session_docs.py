"""``GET /api/session/`` without the WebSocket upgrade, and ``/api/session/docs/``: the
session protocol's page, generated from the operations' definitions (the same ones REST and
the OpenAPI schema use), so it cannot drift from what the session accepts and answers."""

from __future__ import annotations

import json

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from .operations import SESSION_OPERATIONS


def session_upgrade_required(request: HttpRequest) -> JsonResponse:
    response = JsonResponse(
        {
            "code": "upgrade_required",
            "message": "/api/session/ is a WebSocket: connect with an Upgrade request. See /api/session/docs/.",
        },
        status=426,
    )
    response["Upgrade"] = "websocket"
    return response


def _schema(model) -> str:
    return json.dumps(model.model_json_schema(mode="validation"), indent=2, sort_keys=True)


def session_docs(request: HttpRequest) -> HttpResponse:
    operations = [
        {
            "name": name,
            "summary": (operation.__doc__ or "").strip(),
            "rest": operation.__name__,
            "input": _schema(operation.Input),
            "outputs": [
                {
                    "status": status,
                    "schema": json.dumps(model.model_json_schema(mode="serialization"), indent=2, sort_keys=True),
                }
                for status, model in sorted(operation.outputs().items())
            ],
        }
        for name, operation in sorted(SESSION_OPERATIONS.items())
    ]
    return render(request, "brokers/session_docs.html", {"operations": operations})

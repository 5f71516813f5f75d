"""``GET /api/``: where the API starts. Its roots (collections with no name in their path),
every route as written in the URL configuration, and the docs; read from the resolver, so
a new route shows up here by itself. It shows no data and needs no token."""

from __future__ import annotations

from django.http import JsonResponse
from django.urls import URLPattern, URLResolver, get_resolver
from django.views.decorators.http import require_GET

DOCS = {
    "openapi": "/api/schema/",
    "swagger_ui": "/api/schema/docs/",
    "redoc": "/api/schema/redoc/",
    "session": "/api/session/docs/",
}


def _routes(patterns, prefix: str = "") -> list[str]:
    found = []
    for item in patterns:
        text = prefix + str(item.pattern)
        if isinstance(item, URLResolver):
            found += _routes(item.url_patterns, text)
        elif isinstance(item, URLPattern):
            found.append(text)
    return found


def api_routes() -> list[str]:
    """Every route under /api/, as ``/api/brokers/<name:broker>/queues/``, sorted."""
    routes = {"/" + r for r in _routes(get_resolver().url_patterns) if r.startswith("api/") and r != "api/"}
    return sorted(routes)


@require_GET
def api_index(request):
    routes = api_routes()
    roots = [r for r in routes if "<" not in r and not r.startswith("/api/schema/") and r != "/api/session/docs/"]
    return JsonResponse(
        {
            "name": "Baton",
            "roots": roots,
            "routes": routes,
            "docs": DOCS,
            "authentication": "Authorization: Token <token> (manage.py api_token NAME), or a dashboard sign-in",
        },
        json_dumps_params={"indent": 2},
    )

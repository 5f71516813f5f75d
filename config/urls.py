from django.conf import settings
from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView

from brokers.api.index import api_index
from brokers.api.session_docs import session_docs, session_upgrade_required
from brokers.operating.views import MetricsView

urlpatterns = [
    path("api/", api_index, name="api-index"),
    # /healthz and /readyz: config.health, a middleware before the host check
    path("metrics", MetricsView.as_view(), name="metrics"),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/schema/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="schema-docs"),
    # ReDoc without drf-spectacular's web fonts from Google: the docs load nothing from elsewhere
    path(
        "api/schema/redoc/",
        SpectacularRedocView.as_view(url_name="schema", template_name="api/redoc.html"),
        name="schema-redoc",
    ),
    # the session is a WebSocket (config/asgi.py); a plain GET is told so, its page beside it
    path("api/session/", session_upgrade_required, name="session"),
    path("api/session/docs/", session_docs, name="session-docs"),
    path("api/", include("topology.urls")),
    path("api/", include("brokers.channels.api.urls")),
    path("api/", include("pubsub.api.urls")),
    path("api/", include("workflows.api.urls")),
    path("api/", include("ingest.urls")),
    path("api/", include("analytics.urls")),
    path("api/", include("brokers.api.urls")),
    path("", include("dashboard.urls")),
]

if settings.BATON_ADMIN:  # Django's admin: off unless asked for (config/settings/admin.py)
    urlpatterns.insert(0, path("admin/", admin.site.urls))

handler404 = "config.errors.json_404"
handler500 = "config.errors.json_500"

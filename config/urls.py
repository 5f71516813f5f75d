from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/schema/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="schema-docs"),
    path("api/schema/redoc/", SpectacularRedocView.as_view(url_name="schema"), name="schema-redoc"),
    path("api/", include("brokers.channel_urls")),
    path("api/", include("ingest.urls")),
    path("api/", include("analytics.urls")),
    path("api/", include("brokers.api.urls")),
    path("", include("dashboard.urls")),
]

handler404 = "config.errors.json_404"
handler500 = "config.errors.json_500"

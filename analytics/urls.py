"""Analytics routes (included before the brokers' routes: a broker name may contain '/')."""

from django.urls import path

from brokers.api import urls as _brokers_urls  # noqa: F401  (registers the name and id converters)

from .api import AnalyticsRunDetailView, AnalyticsRunsView, BrokerAnalyticsView

urlpatterns = [
    path("brokers/<name:broker>/analytics/", BrokerAnalyticsView.as_view(), name="broker-analytics"),
    path("analytics/runs/<id:run_id>/", AnalyticsRunDetailView.as_view(), name="analytics-run-detail"),
    path("analytics/runs/", AnalyticsRunsView.as_view(), name="analytics-runs"),
]

"""Workflow routes under /api/ (the name and id converters are brokers.api.urls')."""

from django.urls import path

import brokers.api.urls  # noqa: F401  (registers the converters)

from . import views

urlpatterns = [
    path(
        "brokers/<name:broker>/workflows/<name:name>/instances/",
        views.InstanceListView.as_view(),
        name="workflow-instances",
    ),
    path("brokers/<name:broker>/workflows/<name:name>/", views.WorkflowDetailView.as_view(), name="workflow-detail"),
    path("brokers/<name:broker>/workflows/", views.WorkflowListView.as_view(), name="workflow-list"),
    path(
        "workflow-instances/<id:instance>/steps/<name:step>/complete/",
        views.StepCompleteView.as_view(),
        name="workflow-step-complete",
    ),
    path(
        "workflow-instances/<id:instance>/steps/<name:step>/fail/",
        views.StepFailView.as_view(),
        name="workflow-step-fail",
    ),
    path(
        "workflow-instances/<id:instance>/steps/<name:step>/compensated/",
        views.StepCompensatedView.as_view(),
        name="workflow-step-compensated",
    ),
    path("workflow-instances/<id:instance>/abort/", views.AbortView.as_view(), name="workflow-abort"),
    path("workflow-instances/<id:instance>/resubmit/", views.ResubmitView.as_view(), name="workflow-resubmit"),
    path("workflow-instances/<id:instance>/", views.InstanceDetailView.as_view(), name="workflow-instance"),
]

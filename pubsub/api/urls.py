"""Publish/subscribe routes under /api/ (the name converter is brokers.api.urls')."""

from django.urls import path

import brokers.api.urls  # noqa: F401  (registers the name converter)

from . import views

urlpatterns = [
    path("brokers/<name:broker>/topics/<name:name>/", views.TopicDetailView.as_view(), name="topic-detail"),
    path("brokers/<name:broker>/topics/", views.TopicListView.as_view(), name="topic-list"),
    path("brokers/<name:broker>/publish/", views.PublishView.as_view(), name="publish"),
    path(
        "brokers/<name:broker>/subscriptions/<name:name>/",
        views.SubscriptionDetailView.as_view(),
        name="subscription-detail",
    ),
    path("brokers/<name:broker>/subscriptions/", views.SubscriptionListView.as_view(), name="subscription-list"),
    path("brokers/<name:broker>/retained/", views.RetainedView.as_view(), name="retained"),
]

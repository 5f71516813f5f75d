"""Routes of the channels' API (under /api/)."""

from django.urls import path

from . import views

urlpatterns = [
    path("channels/<str:channel>/start/", views.ChannelStartView.as_view(), name="channel-start"),
    path("channels/<str:channel>/stop/", views.ChannelStopView.as_view(), name="channel-stop"),
    path("channels/<str:channel>/", views.ChannelDetailView.as_view(), name="channel-detail"),
    path("channels/", views.ChannelListView.as_view(), name="channel-list"),
    path("receiver/batches/commit/", views.ReceiverCommitView.as_view(), name="receiver-commit"),
    path("receiver/batches/backout/", views.ReceiverBackoutView.as_view(), name="receiver-backout"),
    path("receiver/batches/status/", views.ReceiverStatusView.as_view(), name="receiver-status"),
    path("receiver/batches/", views.ReceiverBatchView.as_view(), name="receiver-batch"),
]

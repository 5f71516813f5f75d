from django.urls import path

from . import channel_api as views

urlpatterns = [
    path("channels/<str:name>/start/", views.ChannelStartView.as_view(), name="channel-start"),
    path("channels/<str:name>/stop/", views.ChannelStopView.as_view(), name="channel-stop"),
    path("channels/<str:name>/", views.ChannelDetailView.as_view(), name="channel-detail"),
    path("channels/", views.ChannelListView.as_view(), name="channel-list"),
    path("receiver/batches/commit/", views.ReceiverCommitView.as_view(), name="receiver-commit"),
    path("receiver/batches/backout/", views.ReceiverBackoutView.as_view(), name="receiver-backout"),
    path("receiver/batches/status/", views.ReceiverStatusView.as_view(), name="receiver-status"),
    path("receiver/batches/", views.ReceiverBatchView.as_view(), name="receiver-batch"),
]

from django.urls import path

from .consumers import OverviewConsumer

websocket_urlpatterns = [path("ws/overview/", OverviewConsumer.as_asgi())]

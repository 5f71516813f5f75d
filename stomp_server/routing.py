"""WebSocket routes: STOMP at /stomp/."""

from django.urls import path

from .consumers import StompConsumer

websocket_urlpatterns = [path("stomp/", StompConsumer.as_asgi())]

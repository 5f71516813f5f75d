"""The API's WebSocket route: the session (``/api/session/``). It authenticates by token
(header or first frame), never by cookie, so a foreign page gains nothing by opening it."""

from django.urls import path

from .session import SessionConsumer

websocket_urlpatterns = [
    path("api/session/", SessionConsumer.as_asgi()),
]

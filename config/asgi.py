"""ASGI entry point: WebSockets through Django Channels, HTTP through Django's WSGI handler
in a thread pool (config/threaded_wsgi.py).

HTTP goes through WSGI on purpose: under Django's ASGI handler every sync view runs in one
shared thread, so a waiting get or a held commit would stall every other request. Here
each request has a pool thread (and its own persistent database connection) for as long
as it waits.
"""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

from django.core.asgi import get_asgi_application  # noqa: E402

from config.memtrace import memtrace_start  # noqa: E402

memtrace_start(process="web")  # off unless BATON_TRACEMALLOC names a directory

get_asgi_application()  # sets Django up before the imports below touch models

from config.running import platform_lock_hold  # noqa: E402

platform_lock_hold()  # while it serves, `manage.py baton restore` refuses (config/running.py)

from django.conf import settings  # noqa: E402

from config.cpu_pin import uvicorn_serving, web_cpu_pinned  # noqa: E402

if uvicorn_serving():  # before the server starts its threads
    web_cpu_pinned(settings.BATON_WEB_CPU)

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.urls import re_path  # noqa: E402

from brokers.api.routing import websocket_urlpatterns as session_urlpatterns  # noqa: E402
from config.threaded_wsgi import ThreadedWSGI  # noqa: E402
from config.websocket_fallback import websocket_not_found  # noqa: E402
from config.wsgi import application as wsgi_application  # noqa: E402
from dashboard.routing import websocket_urlpatterns  # noqa: E402
from stomp_server.routing import websocket_urlpatterns as stomp_urlpatterns  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": ThreadedWSGI(wsgi_application, threads=settings.BATON_HTTP_THREADS),
        # the session authenticates by token itself (never by the cookie the stack reads), so
        # it is routed outside the stack: its replies go straight to the server, through none
        # of the stack's wrappers; STOMP authenticates by its CONNECT frame; the dashboard's
        # pages by the sign-in cookie; any other path is refused with 404
        "websocket": URLRouter(
            [
                *session_urlpatterns,
                re_path(
                    r"",
                    AuthMiddlewareStack(
                        URLRouter([*stomp_urlpatterns, *websocket_urlpatterns, re_path(r"", websocket_not_found)])
                    ),
                ),
            ]
        ),
    }
)

from config.collector import collector_tuned  # noqa: E402

collector_tuned(settings.BATON_GC_THRESHOLD)  # what is loaded now stays for the process's life

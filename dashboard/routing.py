from channels.security.websocket import AllowedHostsOriginValidator
from django.urls import path

import brokers.api.urls  # noqa: F401  (registers the ``name`` converter)

from .consumers import (
    ConnectionsConsumer,
    GraphConsumer,
    JobConsumer,
    OverviewConsumer,
    TopicsConsumer,
    WorkflowInstanceConsumer,
    WorkflowListConsumer,
)

# A browser always sends Origin on a WebSocket upgrade; one naming a host outside
# ALLOWED_HOSTS (another site's page using the visitor's session cookie) is refused.
websocket_urlpatterns = [
    path("ws/overview/", AllowedHostsOriginValidator(OverviewConsumer.as_asgi())),
    path("ws/brokers/<name:broker>/transactions/", AllowedHostsOriginValidator(GraphConsumer.as_asgi())),
    path("ws/brokers/<name:broker>/workflows/", AllowedHostsOriginValidator(WorkflowListConsumer.as_asgi())),
    path("ws/brokers/<name:broker>/topics/", AllowedHostsOriginValidator(TopicsConsumer.as_asgi())),
    path("ws/brokers/<name:broker>/connections/", AllowedHostsOriginValidator(ConnectionsConsumer.as_asgi())),
    path(
        "ws/brokers/<name:broker>/queues/<name:queue>/consumers/",
        AllowedHostsOriginValidator(ConnectionsConsumer.as_asgi()),
    ),
    path("ws/jobs/<int:job_id>/", AllowedHostsOriginValidator(JobConsumer.as_asgi())),
    path(
        "ws/workflow-instances/<str:instance_id>/",
        AllowedHostsOriginValidator(WorkflowInstanceConsumer.as_asgi()),
    ),
]

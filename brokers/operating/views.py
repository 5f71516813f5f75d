"""``GET /metrics`` (docs/monitoring.md). Not an API operation: its reply is the
Prometheus exposition, not JSON, and no session or STOMP frame asks for it. Refusals are the
API's JSON errors: 401 without a token or with an unknown one, 403 for a user who is neither
a superuser nor granted ``monitor``."""

from __future__ import annotations

from django.http import HttpResponse
from drf_spectacular.utils import extend_schema
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.permissions import IsAuthenticated
from rest_framework.renderers import JSONRenderer
from rest_framework.views import APIView

from brokers.api.authentication import TokenAuthentication

from ..permissions import monitored_brokers
from .metrics import metrics_exposition


class _ErrorsInJSON(BaseContentNegotiation):
    """Refusals in JSON whatever the scraper accepts; the exposition is always the text format."""

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


class MetricsView(APIView):
    authentication_classes = [TokenAuthentication]
    permission_classes = [IsAuthenticated]
    renderer_classes = [JSONRenderer]
    content_negotiation_class = _ErrorsInJSON

    @extend_schema(exclude=True)
    def get(self, request):
        brokers = monitored_brokers(request.user)
        body, content_type = metrics_exposition(brokers=brokers)
        return HttpResponse(body, content_type=content_type)

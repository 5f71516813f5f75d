"""OpenAPI helpers for the publish/subscribe views: the same error responses and path
parameters as the rest of the API (brokers.api.schema)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers

from brokers.api.schema import BROKER, NO_CONTENT, PATH_NAME, responses

TAG = "publish/subscribe"
NAME = OpenApiParameter(
    "name",
    str,
    OpenApiParameter.PATH,
    required=True,
    pattern=PATH_NAME,
    description="Topic object or subscription name.",
    examples=[OpenApiExample("name", value="T1")],
)


def page(name: str, item: type[serializers.Serializer]) -> serializers.Serializer:
    """A list's answer: ``{"count", "results": [...]}``."""
    return inline_serializer(name, {"count": serializers.IntegerField(), "results": item(many=True)})


def operation(
    operation_id: str,
    ok: dict,
    *errors: int,
    request=None,
    detail: bool = False,
    parameters=(),
    description: str | None = None,
):
    """extend_schema for one operation: its successful responses, 401/403/429 and ``errors``."""
    return extend_schema(
        operation_id=operation_id,
        tags=[TAG],
        request=request,
        responses=responses(ok, *errors),
        parameters=[BROKER, *([NAME] if detail else []), *parameters],
        description=description,
    )


__all__ = ["NO_CONTENT", "operation", "page"]

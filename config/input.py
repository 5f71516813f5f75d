"""Validating a request body with a view's ``InputSerializer``: unknown fields are a 400
``invalid`` naming them (DRF ignores them by default), as are bodies that are not objects."""
from __future__ import annotations

from typing import Any

from rest_framework import serializers
from rest_framework.request import Request

from .errors import InvalidInput


def validated(serializer_class: type[serializers.Serializer], request: Request) -> dict[str, Any]:
    data = request.data if request.body else {}
    if hasattr(data, "dict") and not data:
        data = {}
    if not isinstance(data, dict):
        raise InvalidInput("The request body must be a JSON object.", errors={"body": ["Must be an object."]})
    unknown = sorted(set(data) - set(serializer_class().fields))
    if unknown:
        raise InvalidInput("The request is not valid.", errors={name: ["Unknown field."] for name in unknown})
    serializer = serializer_class(data=data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)

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
    if not serializer.is_valid():
        raise InvalidInput("The request is not valid.", errors=dict(_flat(serializer.errors)))
    return dict(serializer.validated_data)


def _flat(errors, prefix: str = ""):
    """DRF's nested errors (a list field's item errors are a dict by index) as one level of
    ``name`` / ``name[3]`` → messages, the shape every other 400 has."""
    if isinstance(errors, dict):
        for key, value in errors.items():
            name = f"{prefix}[{key}]" if prefix and str(key).isdigit() else (f"{prefix}.{key}" if prefix else str(key))
            yield from _flat(value, name)
    elif isinstance(errors, list) and all(isinstance(e, str) for e in errors):
        yield prefix or "non_field_errors", [str(e) for e in errors]
    elif isinstance(errors, list):
        for index, value in enumerate(errors):
            yield from _flat(value, f"{prefix}[{index}]")
    else:
        yield prefix or "non_field_errors", [str(errors)]

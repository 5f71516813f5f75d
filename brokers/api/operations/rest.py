"""REST's side of an operation: the request's body (or query) with the path's fields in,
the operation's answer out."""

from __future__ import annotations

from typing import Any

from rest_framework.request import Request
from rest_framework.response import Response

from config.errors import InvalidInput

from ..waits import performed
from .base import Operation

#: Path parameter -> the operation's field.
_PATH_FIELDS = {"transaction_id": "transaction", "token": "lock_token"}


def request_body(request: Request) -> dict[str, Any]:
    data = request.data
    if not request.body if hasattr(request, "body") else False:
        return {}
    if hasattr(data, "dict") and not data:  # no body at all: an empty QueryDict
        return {}
    if not isinstance(data, dict):
        raise InvalidInput("The request body must be a JSON object.", errors={"body": ["Must be an object."]})
    return data


def request_query(request: Request) -> dict[str, Any]:
    return dict(request.query_params.items())


def operation_response(
    operation: type[Operation], request: Request, data: dict[str, Any] | None = None, **path: str
) -> Response:
    """Validate the body (or ``data``) with the path's fields, perform, render."""
    data = dict(request_body(request) if data is None else data)
    for name, value in path.items():
        name = _PATH_FIELDS.get(name, name)
        if name in data:
            raise InvalidInput("The request is not valid.", errors={name: ["Given in the path; not in the body."]})
        data[name] = value
    operation.permitted_first(request.user, data)
    parsed = operation.parse(data)
    status, body = performed(operation, request.user, parsed)  # a wait takes one of the user's slots
    body = operation.checked(status, body)
    return Response(body if status != 204 else None, status=status)

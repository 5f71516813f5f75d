"""REST's side of an operation: the request's body (or query) with the path's fields in,
the operation's answer out; and the views and URL patterns made from the operations'
definitions (:func:`rest_urls`)."""

from __future__ import annotations

from typing import Any

from django.urls import URLPattern, path
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from baton_client.errors import InvalidInput

from ..waits import performed
from .base import Operation

#: Path parameter -> the operation's field.
_PATH_FIELDS = {"transaction_id": "transaction", "token": "lock_token"}


def request_body(request: Request) -> Any:
    """The request's JSON body as sent (no body at all: ``{}``); whether it is an object is
    the operation's to check (``Operation.parse``)."""
    if not getattr(request, "body", b"x"):
        return {}
    data = request.data
    if hasattr(data, "dict") and not data:  # no body at all: an empty QueryDict
        return {}
    return data


def request_query(request: Request) -> dict[str, Any]:
    return dict(request.query_params.items())


def operation_response(operation: type[Operation], request: Request, data: Any = None, **fields: str) -> Response:
    """Validate the body (or ``data``) with the path's fields, perform, render."""
    data = request_body(request) if data is None else data
    if isinstance(data, dict):
        data = dict(data)
        for name, value in fields.items():
            name = _PATH_FIELDS.get(name, name)
            if name in data:
                raise InvalidInput("The request is not valid.", errors={name: ["Given in the path; not in the body."]})
            data[name] = value
        operation.permitted_first(request.user, data)
    parsed = operation.parse(data)  # a body that is not an object is refused here
    status, body = performed(operation, request.user, parsed)  # a wait takes one of the user's slots
    body = operation.checked(status, body)
    return Response(body if status != 204 else None, status=status)


def _view(operations: list[type[Operation]]) -> type[APIView]:
    """One route's view: a method per operation, each documented from its definition."""
    from .. import schema

    methods: dict[str, Any] = {
        "__doc__": " / ".join(f"{op.method.upper()}: {op.__name__}" for op in operations),
        #: method -> the operation that answers it
        "operations": {op.method: op for op in operations},
    }
    for op in operations:

        def handle(self, request: Request, _operation: type[Operation] = op, **kwargs: str) -> Response:
            if _operation.query:
                data = request_query(request)
            elif _operation.method in ("post", "put", "patch"):
                data = request_body(request)
            else:
                data = {}
            return operation_response(_operation, request, data, **kwargs)

        assert sum(o.method == op.method for o in operations) == 1, f"{op.route}: two answer {op.method.upper()}"
        methods[op.method] = schema.documented(op)(handle)
    return type(f"{operations[0].__name__}View", (APIView,), methods)


def rest_urls(*operations: type[Operation]) -> list[URLPattern]:
    """The URL patterns of ``operations``: one view per route (in the order first given: the
    most specific routes first), named by the ``url_name`` one of its operations declares."""
    routes: dict[str, list[type[Operation]]] = {}
    for op in operations:
        assert op.route and op.operation_id and op.tag, f"{op.__name__} declares no route, operation id or tag"
        routes.setdefault(op.route, []).append(op)
    patterns = []
    for route, ops in routes.items():
        names = {op.url_name for op in ops if op.url_name}
        assert len(names) <= 1, f"{route}: named {sorted(names)}"
        patterns.append(path(route, _view(ops).as_view(), name=next(iter(names), None)))
    return patterns

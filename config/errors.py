"""The DRF exception handler that renders Baton's one exception hierarchy.

The hierarchy itself lives in the client distribution (``clients/python``,
:mod:`baton_client.errors`), so that the server and the client raise the same classes;
every module imports them from there (one route to each class). Every
error a client can see has a stable machine-readable ``code`` and an HTTP status; the
class docstring is the default message. Domain modules subclass :class:`BatonError`
(``transactions.exceptions``, ``brokers.exceptions``); views never build error bodies
themselves.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied, RequestDataTooBig
from django.http import Http404, JsonResponse
from rest_framework import exceptions as drf
from rest_framework.response import Response

from baton_client.errors import (
    BatonError,
    InvalidInput,
    MessageTooLarge,
    MethodNotAllowed,
    NotAcceptable,
    NotAuthenticated,
    NotFound,
    PermissionDenied,
    ServerError,
    Throttled,
    UnsupportedMediaType,
)


def _request_too_large(context: dict) -> MessageTooLarge:
    """Django refused to read a request body over DATA_UPLOAD_MAX_MEMORY_SIZE (its
    RequestDataTooBig, a 400 by default): the same 413 as a message over the queue's limit."""
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    request = context.get("request")
    details: dict[str, Any] = {"max_request_length": limit}
    try:
        details["length"] = int(request.META.get("CONTENT_LENGTH") or 0) if request is not None else None
    except ValueError:
        pass
    return MessageTooLarge(f"The request body is larger than the {limit} bytes accepted.", **details)


#: DRF's own exceptions, rendered with the code and status of the hierarchy's class.
DRF_ERRORS: list[tuple[type[Exception], type[BatonError]]] = [
    (drf.NotAuthenticated, NotAuthenticated),
    (drf.AuthenticationFailed, NotAuthenticated),
    (drf.PermissionDenied, PermissionDenied),
    (drf.NotFound, NotFound),
    (drf.MethodNotAllowed, MethodNotAllowed),
    (drf.NotAcceptable, NotAcceptable),
    (drf.UnsupportedMediaType, UnsupportedMediaType),
    (drf.Throttled, Throttled),
    (drf.ParseError, InvalidInput),
    (drf.ValidationError, InvalidInput),
]


def _auth_header(exc: Exception, context: dict) -> dict[str, str]:
    view = context.get("view")
    request = context.get("request")
    if view is not None and request is not None and isinstance(exc, (drf.NotAuthenticated, drf.AuthenticationFailed)):
        header = view.get_authenticate_header(request)
        if header:
            return {"WWW-Authenticate": header}
    return {}


def api_exception_handler(exc: Exception, context: dict) -> Response | None:
    """Render every error as ``{"code", "message", ...details}`` with its status."""
    if isinstance(exc, RequestDataTooBig):
        exc = _request_too_large(context)
    if isinstance(exc, BatonError):
        retry = exc.details.get("retry_after") if isinstance(exc, Throttled) else None
        return Response(
            exc.as_dict(),
            status=exc.status,
            headers={"Retry-After": str(max(1, round(retry)))} if retry is not None else None,
        )
    if isinstance(exc, Http404):
        return Response({"code": "not_found", "message": "Not found."}, status=404)
    if isinstance(exc, DjangoPermissionDenied):
        exc = drf.PermissionDenied()
    for cls, error in DRF_ERRORS:
        if isinstance(exc, cls):
            code, status = error.code, error.status
            body: dict[str, Any] = {"code": code}
            if isinstance(exc, drf.ValidationError):
                body["message"] = "The request is not valid."
                body["errors"] = exc.detail if isinstance(exc.detail, dict) else {"non_field_errors": exc.detail}
            else:
                body["message"] = str(exc.detail)
            headers = _auth_header(exc, context)
            if isinstance(exc, drf.Throttled) and exc.wait is not None:
                headers["Retry-After"] = str(int(exc.wait))
            return Response(body, status=status, headers=headers)
    return None


def json_404(request, exception=None) -> JsonResponse:
    return JsonResponse(NotFound("No such endpoint.").as_dict(), status=NotFound.status)


def json_500(request) -> JsonResponse:
    return JsonResponse(ServerError().as_dict(), status=ServerError.status)

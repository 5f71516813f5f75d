"""Baton's one exception hierarchy and the DRF exception handler that renders it.

Every error a client can see has a stable machine-readable ``code`` and an HTTP status.
The class docstring is the default message. Domain modules subclass :class:`BatonError`
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


class BatonError(Exception):
    """Something went wrong."""

    code = "error"
    status = 400

    def __init__(self, message: str | None = None, **details: Any) -> None:
        self.message = message or (self.__doc__ or self.code).strip().splitlines()[0]
        self.details = details
        super().__init__(self.message)

    def as_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, **self.details}


class InvalidInput(BatonError):
    """The request is not valid."""

    code = "invalid"
    status = 400


class NotFound(BatonError):
    """Not found."""

    code = "not_found"
    status = 404


class AlreadyExists(BatonError):
    """An object with that name already exists."""

    code = "already_exists"
    status = 409


class Conflict(BatonError):
    """The request conflicts with the object's current state."""

    code = "conflict"
    status = 409


class OptionsConflict(BatonError):
    """These options cannot be used together."""

    code = "options_conflict"
    status = 409


class PermissionDenied(BatonError):
    """You may not do that."""

    code = "permission_denied"
    status = 403


class MessageTooLarge(BatonError):
    """The message is longer than the queue accepts."""

    code = "message_too_large"
    status = 413


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


_DRF_CODES: list[tuple[type[Exception], str, int]] = [
    (drf.NotAuthenticated, "not_authenticated", 401),
    (drf.AuthenticationFailed, "not_authenticated", 401),
    (drf.PermissionDenied, "permission_denied", 403),
    (drf.NotFound, "not_found", 404),
    (drf.MethodNotAllowed, "method_not_allowed", 405),
    (drf.NotAcceptable, "not_acceptable", 406),
    (drf.UnsupportedMediaType, "unsupported_media_type", 415),
    (drf.Throttled, "throttled", 429),
    (drf.ParseError, "invalid", 400),
    (drf.ValidationError, "invalid", 400),
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
        return Response(exc.as_dict(), status=exc.status)
    if isinstance(exc, Http404):
        return Response({"code": "not_found", "message": "Not found."}, status=404)
    if isinstance(exc, DjangoPermissionDenied):
        exc = drf.PermissionDenied()
    for cls, code, status in _DRF_CODES:
        if isinstance(exc, cls):
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
    return JsonResponse({"code": "not_found", "message": "No such endpoint."}, status=404)


def json_500(request) -> JsonResponse:
    return JsonResponse({"code": "server_error", "message": "The server failed to handle the request."}, status=500)

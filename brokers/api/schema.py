"""The OpenAPI schema's pieces that are not an operation's own definition: the error body,
path parameters, examples, and :func:`operation`, which documents an operation from its
definition in ``brokers.api.operations``. (The transaction graph is still described by
serializers here.)"""

from __future__ import annotations

from django.core.validators import RegexValidator
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
)
from rest_framework import serializers as s

from transactions.models import TransactionState

from ..models import (
    NAME_PATTERN,
)

HEX48 = r"^[0-9a-fA-F]{48}$"
HEX32 = r"^[0-9a-fA-F]{32}$"
#: A name in a path: as NAME_PATTERN, without '/' (which names may hold, sent as %2F).
PATH_NAME = r"^[A-Za-z0-9._%]{1,48}$"


def _name(**kwargs) -> s.CharField:
    return s.CharField(max_length=48, validators=[RegexValidator(NAME_PATTERN)], **kwargs)


def _hex48(**kwargs) -> s.CharField:
    return s.CharField(min_length=48, max_length=48, validators=[RegexValidator(HEX48)], **kwargs)


@extend_schema_field(OpenApiTypes.BYTE)
class Base64Field(s.CharField):
    """Bytes as standard base64."""


@extend_schema_field({"type": "object", "additionalProperties": True})
class ObjectField(s.JSONField):
    """Any JSON object."""


# --- errors ---------------------------------------------------------------------------------


class ErrorSerializer(s.Serializer):
    """Every error: a stable ``code``, a ``message`` for a person, and details (an invalid
    request has ``errors``: field name to list of problems)."""

    code = s.CharField(
        help_text="invalid, not_authenticated, permission_denied, not_found, "
        "transaction_backed_out, transaction_not_active, put_inhibited, get_inhibited, "
        "queue_full, options_conflict, already_exists, message_too_large, throttled, ..."
    )
    message = s.CharField()
    errors = s.DictField(
        child=s.ListField(child=s.CharField()), required=False, help_text="With code invalid: the problems per field."
    )


def _error(description: str) -> OpenApiResponse:
    return OpenApiResponse(ErrorSerializer, description=description)


E400 = _error("invalid: the request is not valid (details per field in errors).")
E401 = _error("not_authenticated: no valid token.")
E403 = _error("permission_denied: the user may not do this (the message names the action and the object).")
E404 = _error("not_found: no such object.")
E409 = _error(
    "Conflict with the object's state: already_exists, not_empty, put_inhibited, get_inhibited, "
    "queue_full, transaction_backed_out, transaction_not_active, options_conflict, queue_in_use, ..."
)
E410 = _error("lock_lost: the lock expired.")
E413 = _error("message_too_large: a message is longer than the queue accepts, or the request body is too long.")
E429 = _error("throttled: too many requests; retry after the Retry-After header's seconds.")
NO_CONTENT = OpenApiResponse(description="Deleted.")


def responses(ok: dict, *errors: int) -> dict:
    """A view's responses: the successful ones, 401, 403 and 429 always, and ``errors``."""
    table = {400: E400, 401: E401, 403: E403, 404: E404, 409: E409, 410: E410, 413: E413, 429: E429}
    return {**ok, **{code: table[code] for code in sorted({401, 403, 429, *errors})}}


# --- path and query parameters --------------------------------------------------------------


def _path(name: str, description: str, pattern: str, example: str) -> OpenApiParameter:
    return OpenApiParameter(
        name,
        str,
        OpenApiParameter.PATH,
        required=True,
        description=description,
        pattern=pattern,
        examples=[OpenApiExample(name, value=example)],
    )


BROKER = _path("broker", "Broker name.", PATH_NAME, "QM1")
QUEUE = _path("queue", "Queue name.", PATH_NAME, "Q1")
TRANSACTION = _path("transaction_id", "Transaction id (32 hex characters).", HEX32, "0123456789abcdef0123456789abcdef")
CHANNEL = _path("channel", "Channel name.", PATH_NAME, "QMA.TO.QMB")
CONNECTION = _path("conn_id", "Connection id (48 hex characters).", HEX48, "0" * 48)
TOKEN = _path("token", "Lock token of a peek-locked message.", r"^[0-9a-fA-F]{1,32}$", "0" * 32)
LIMIT = OpenApiParameter("limit", int, description="Rows a page returns (1 to 1000).")
OFFSET = OpenApiParameter("offset", int, description="Rows to skip.")
PURGE = OpenApiParameter("purge", bool, description="Delete even if it still holds messages (they are discarded).")
PAGE = [LIMIT, OFFSET]


# --- transactions ---------------------------------------------------------------------------


class GraphNodeSerializer(s.Serializer):
    id = s.CharField()
    broker = s.CharField()
    state = s.ChoiceField(TransactionState.values)
    reason = s.CharField(allow_null=True)
    created_at = s.DateTimeField()
    resolved_at = s.DateTimeField(allow_null=True)
    yours = s.BooleanField(
        help_text="Whether you may act on it: you began it, administer its broker, or are a superuser."
    )


class GraphEdgeSerializer(s.Serializer):
    upstream = s.CharField()
    downstream = s.CharField()
    resource = s.CharField()


class TransactionGraphSerializer(s.Serializer):
    broker = s.CharField()
    nodes = GraphNodeSerializer(many=True)
    edges = GraphEdgeSerializer(many=True)


# --- request examples (the docs show them; schemathesis sends them first) -------------------


def _example(name: str, value: dict) -> OpenApiExample:
    return OpenApiExample(name, value=value, request_only=True)


BROKER_EXAMPLES = [_example("A broker", {"name": "QM2", "description": "Orders", "transaction_timeout_ms": 60000})]
BROKER_CHANGE_EXAMPLES = [_example("A new timeout", {"transaction_timeout_ms": 30000})]
QUEUE_EXAMPLES = [
    _example("A local queue", {"name": "ORDERS", "max_depth": 10000, "default_priority": 4}),
    _example(
        "A remote queue",
        {
            "name": "PAYMENTS",
            "kind": "remote",
            "remote_broker": "QM2",
            "remote_queue": "PAYMENTS.IN",
            "transmission_queue": "QM2",
        },
    ),
]
QUEUE_CHANGE_EXAMPLES = [_example("Stop puts", {"put_enabled": False})]
PUT_EXAMPLES = [
    _example("One message", {"body": "hello", "priority": 5, "properties": {"order": "42"}}),
    _example("A batch", {"messages": [{"body": "one"}, {"body_base64": "AAEC/w=="}], "syncpoint": "no"}),
]
GET_EXAMPLES = [
    _example("One message now", {}),
    _example("Up to ten, waiting a second", {"wait": 1, "batch": 10}),
    _example("Peek-lock", {"mode": "peek_lock"}),
]
BEGIN_EXAMPLES = [_example("A minute", {"timeout_ms": 60000})]
WAIT_EXAMPLES = [_example("Do not wait", {"wait": 0})]
CONNECTION_EXAMPLES = [_example("An application", {"client_name": "billing-1"})]
CHANNEL_EXAMPLES = [
    _example(
        "To a broker of this platform",
        {
            "name": "QMA.TO.QMB",
            "source_broker": "QMA",
            "transmission_queue": "QMB",
            "target_broker": "QMB",
            "batch_size": 50,
            "preemptive": True,
        },
    ),
    _example(
        "To another platform",
        {
            "name": "QMA.TO.FAR",
            "source_broker": "QMA",
            "transmission_queue": "FAR",
            "target_broker": "FAR",
            "target_url": "https://far.example.com",
            "target_token": "0123456789abcdef0123456789abcdef01234567",
        },
    ),
]
CHANNEL_CHANGE_EXAMPLES = [_example("A bigger window", {"window": 16})]
DEAD_LETTER_EXAMPLES = [_example("Cannot process", {"reason": "unparseable order"})]


# --- the operations (the views wear these) --------------------------------------------------

_UNSET = object()


def _operation(
    operation_id: str,
    tag: str,
    ok: dict,
    *errors: int,
    parameters=(),
    request=_UNSET,
    examples=None,
    summary: str | None = None,
):
    kwargs = {"request": request} if request is not _UNSET else {}
    return extend_schema(
        operation_id=operation_id,
        tags=[tag],
        parameters=list(parameters),
        summary=summary,
        examples=examples,
        responses=responses(ok, *errors),
        **kwargs,
    )


transactions_graph = _operation(
    "transactions_graph",
    "transactions",
    {200: TransactionGraphSerializer},
    404,
    parameters=[BROKER],
    summary="The broker's live transaction graph",
)


# --- operations defined once (brokers.api.operations) -----------------------------------------

_PATH_PARAMETERS = {
    "broker": BROKER,
    "queue": QUEUE,
    "transaction": TRANSACTION,
    "lock_token": TOKEN,
    "conn_id": CONNECTION,
    "channel": CHANNEL,
}


def operation(
    op, operation_id: str, tag: str, *errors: int, query: bool = False, examples=None, summary: str | None = None
):
    """The OpenAPI description of one operation, from its definition: the request body (or,
    with ``query``, the query parameters) from its ``Input`` without the path's fields, the
    responses from its ``Output``."""
    from .operations.base import body_model

    body = body_model(op)
    parameters = [_PATH_PARAMETERS[name] for name in op.path]
    request = None if query else body
    if query and body is not None:
        parameters += [
            OpenApiParameter(name, _QUERY_TYPES.get(info.annotation, str), description=info.description)
            for name, info in body.model_fields.items()
        ]
    ok = {status: (model if model.model_fields else NO_CONTENT) for status, model in op.outputs().items()}
    return _operation(
        operation_id,
        tag,
        ok,
        *errors,
        parameters=parameters,
        request=request,
        examples=examples,
        summary=summary or ((op.__doc__ or "").strip().splitlines() or [None])[0],
    )


_QUERY_TYPES = {bool: bool, int: int, float: float}

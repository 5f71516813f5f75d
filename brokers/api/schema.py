"""The OpenAPI schema's pieces that are not an operation's own definition: the error body,
path parameters, examples, and :func:`documented`, which documents an operation from its
definition (``brokers.api.operations``): what it declares, its Input and its Output."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema
from pydantic import BaseModel, ConfigDict, Field

from ..names import PATH_SEGMENT_PATTERN

HEX48 = r"^[0-9a-fA-F]{48}$"
HEX32 = r"^[0-9a-fA-F]{32}$"
#: A name in a path: as NAME_PATTERN, without '/' (which names may hold, sent as %2F).
PATH_NAME = PATH_SEGMENT_PATTERN


# --- errors ---------------------------------------------------------------------------------


class Error(BaseModel):
    """Every error: a stable ``code``, a ``message`` for a person, and details (an invalid
    request has ``errors``: field name to list of problems)."""

    model_config = ConfigDict(extra="allow")

    code: str = Field(
        description="invalid, not_authenticated, permission_denied, not_found, "
        "transaction_backed_out, transaction_not_active, put_inhibited, get_inhibited, "
        "queue_full, options_conflict, already_exists, message_too_large, throttled, ..."
    )
    message: str
    errors: dict[str, list[str]] | None = Field(None, description="With code invalid: the problems per field.")


def _error(description: str) -> OpenApiResponse:
    return OpenApiResponse(Error, description=description)


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


def path_parameter(name: str, description: str, pattern: str, example: str) -> OpenApiParameter:
    return OpenApiParameter(
        name,
        str,
        OpenApiParameter.PATH,
        required=True,
        description=description,
        pattern=pattern,
        examples=[OpenApiExample(name, value=example)],
    )


BROKER = path_parameter("broker", "Broker name.", PATH_NAME, "QM1")
QUEUE = path_parameter("queue", "Queue name.", PATH_NAME, "Q1")
TRANSACTION = path_parameter(
    "transaction_id", "Transaction id (32 hex characters).", HEX32, "0123456789abcdef0123456789abcdef"
)
CHANNEL = path_parameter("channel", "Channel name.", PATH_NAME, "QMA.TO.QMB")
HEX32 = r"^[0-9a-f]{32}$"
CONNECTION = path_parameter("conn_id", "Connection id (48 hex characters).", HEX48, "0" * 48)
STOMP_SESSION = path_parameter("session", "A STOMP connection's session (32 hex characters).", HEX32, "0" * 32)
TOKEN = path_parameter("token", "Lock token of a peek-locked message.", r"^[0-9a-fA-F]{1,32}$", "0" * 32)
LIMIT = OpenApiParameter("limit", int, description="Rows a page returns (1 to 1000).")
OFFSET = OpenApiParameter("offset", int, description="Rows to skip.")
PURGE = OpenApiParameter("purge", bool, description="Delete even if it still holds messages (they are discarded).")
PAGE = [LIMIT, OFFSET]


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


# --- the operations (the generated views wear these) --------------------------------------------------

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


# --- operations defined once (brokers.api.operations) -----------------------------------------

_PATH_PARAMETERS = {
    "broker": BROKER,
    "queue": QUEUE,
    "transaction": TRANSACTION,
    "lock_token": TOKEN,
    "conn_id": CONNECTION,
    "session": STOMP_SESSION,
    "channel": CHANNEL,
}


def documented(op):
    """The OpenAPI description of one operation, all from its definition: the operation id,
    tag, error statuses, examples and summary it declares; the request body (or, for an
    operation that reads the query, the query parameters) from its ``Input`` without the
    path's fields; the responses from its ``Output``."""
    from .operations.base import body_model

    body = body_model(op)
    parameters = [op.path_parameters.get(name) or _PATH_PARAMETERS[name] for name in op.path]
    request = None if op.query else body
    if op.query and body is not None:
        parameters += [
            OpenApiParameter(
                name,
                _QUERY_TYPES.get(info.annotation, str),
                required=info.is_required(),
                description=info.description,
            )
            for name, info in body.model_fields.items()
        ]
    ok = {status: (model if model.model_fields else NO_CONTENT) for status, model in op.outputs().items()}
    return _operation(
        op.operation_id,
        op.tag,
        ok,
        *op.errors,
        parameters=parameters,
        request=request,
        examples=op.examples,
        summary=op.summary or ((op.__doc__ or "").strip().splitlines() or [None])[0],
    )


_QUERY_TYPES = {bool: bool, int: int, float: float}

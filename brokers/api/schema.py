"""The JSON shapes of API.md for the OpenAPI schema (drf-spectacular).

These serializers only describe: the views validate by hand and render with
``brokers.api.render`` and ``message_render``. Keep them in step with those.
"""
from __future__ import annotations

from django.conf import settings
from django.core.validators import RegexValidator
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample, OpenApiParameter, OpenApiResponse, PolymorphicProxySerializer, extend_schema,
    extend_schema_field,
)
from rest_framework import serializers as s

from transactions.models import TransactionState

from ..models import (
    NAME_PATTERN, Access, DeliverySequence, EnforceOrder, MessageType, Persistence, QueueKind, QueueUsage, ReadOrder,
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

    code = s.CharField(help_text="invalid, not_authenticated, permission_denied, not_found, "
                                 "transaction_backed_out, transaction_not_active, put_inhibited, get_inhibited, "
                                 "queue_full, options_conflict, already_exists, message_too_large, throttled, ...")
    message = s.CharField()
    errors = s.DictField(child=s.ListField(child=s.CharField()), required=False,
                         help_text="With code invalid: the problems per field.")


def _error(description: str) -> OpenApiResponse:
    return OpenApiResponse(ErrorSerializer, description=description)


E400 = _error("invalid: the request is not valid (details per field in errors).")
E401 = _error("not_authenticated: no valid token.")
E403 = _error("permission_denied: the user may not do this (the message names the action and the object).")
E404 = _error("not_found: no such object.")
E409 = _error("Conflict with the object's state: already_exists, not_empty, put_inhibited, get_inhibited, "
              "queue_full, transaction_backed_out, transaction_not_active, options_conflict, queue_in_use, ...")
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
    return OpenApiParameter(name, str, OpenApiParameter.PATH, required=True, description=description,
                            pattern=pattern, examples=[OpenApiExample(name, value=example)])


BROKER = _path("broker", "Broker name.", PATH_NAME, "QM1")
QUEUE = _path("queue", "Queue name.", PATH_NAME, "Q1")
TRANSACTION = _path("transaction_id", "Transaction id (32 hex characters).", HEX32, "0123456789abcdef0123456789abcdef")
CONNECTION = _path("conn_id", "Connection id (48 hex characters).", HEX48, "0" * 48)
TOKEN = _path("token", "Lock token of a peek-locked message.", r"^[0-9a-fA-F]{1,32}$", "0" * 32)
LIMIT = OpenApiParameter("limit", int, description="Rows a page returns (1 to 1000).")
OFFSET = OpenApiParameter("offset", int, description="Rows to skip.")
PURGE = OpenApiParameter("purge", bool, description="Delete even if it still holds messages (they are discarded).")
PAGE = [LIMIT, OFFSET]


# --- brokers and queues ---------------------------------------------------------------------

class BrokerChangeSerializer(s.Serializer):
    description = s.CharField(max_length=200, required=False, allow_blank=True)
    dead_letter_queue = _name(required=False)
    transaction_timeout_ms = s.IntegerField(min_value=0, max_value=2**31 - 1, required=False)
    max_message_length = s.IntegerField(min_value=0, max_value=2**31 - 1, required=False)
    default_persistence = s.ChoiceField(Persistence.values, required=False)


class BrokerDefinitionSerializer(BrokerChangeSerializer):
    name = _name()


class BrokerSerializer(s.Serializer):
    name = s.CharField()
    description = s.CharField(allow_blank=True)
    dead_letter_queue = s.CharField()
    transaction_timeout_ms = s.IntegerField()
    max_message_length = s.IntegerField()
    default_persistence = s.ChoiceField(Persistence.values)
    created_at = s.DateTimeField(allow_null=True)


class BrokerPageSerializer(s.Serializer):
    count = s.IntegerField()
    results = BrokerSerializer(many=True)


class QueueChangeSerializer(s.Serializer):
    kind = s.ChoiceField(QueueKind.values, required=False)
    usage = s.ChoiceField(QueueUsage.values, required=False)
    description = s.CharField(max_length=200, required=False, allow_blank=True)
    max_depth = s.IntegerField(min_value=0, max_value=2**31 - 1, required=False)
    max_message_length = s.IntegerField(min_value=0, max_value=2**31 - 1, required=False)
    put_enabled = s.BooleanField(required=False)
    get_enabled = s.BooleanField(required=False)
    default_priority = s.IntegerField(min_value=0, max_value=9, required=False)
    default_persistence = s.ChoiceField(Persistence.values, required=False)
    delivery_sequence = s.ChoiceField(DeliverySequence.values, required=False)
    read_order = s.ChoiceField(ReadOrder.values, required=False)
    enforce_order = s.ChoiceField(EnforceOrder.values, required=False)
    backout_threshold = s.IntegerField(min_value=0, max_value=2**31 - 1, required=False)
    backout_queue = s.CharField(max_length=48, required=False, allow_blank=True)
    lock_duration_ms = s.IntegerField(min_value=1, max_value=2**31 - 1, required=False)
    default_access = s.ChoiceField(Access.values, required=False)
    remote_broker = s.CharField(max_length=48, required=False, allow_blank=True)
    remote_queue = s.CharField(max_length=48, required=False, allow_blank=True)
    transmission_queue = s.CharField(max_length=48, required=False, allow_blank=True)
    target_queue = s.CharField(max_length=48, required=False, allow_blank=True, help_text="For an alias.")


class QueueDefinitionSerializer(QueueChangeSerializer):
    name = _name()


class QueueSerializer(s.Serializer):
    name = s.CharField()
    broker = s.CharField()
    kind = s.ChoiceField(QueueKind.values)
    usage = s.ChoiceField(QueueUsage.values)
    description = s.CharField(allow_blank=True)
    max_depth = s.IntegerField()
    max_message_length = s.IntegerField()
    put_enabled = s.BooleanField()
    get_enabled = s.BooleanField()
    default_priority = s.IntegerField()
    default_persistence = s.ChoiceField(Persistence.values)
    delivery_sequence = s.ChoiceField(DeliverySequence.values)
    read_order = s.ChoiceField(ReadOrder.values)
    enforce_order = s.ChoiceField(EnforceOrder.values)
    backout_threshold = s.IntegerField()
    backout_queue = s.CharField(allow_blank=True)
    lock_duration_ms = s.IntegerField()
    default_access = s.ChoiceField(Access.values)
    remote_broker = s.CharField(allow_blank=True)
    remote_queue = s.CharField(allow_blank=True)
    transmission_queue = s.CharField(allow_blank=True)
    target_queue = s.CharField(allow_blank=True)
    created_at = s.DateTimeField(allow_null=True)
    depth = s.IntegerField(help_text="Committed messages, available or in flight.")
    uncommitted_puts = s.IntegerField()
    in_flight = s.IntegerField()
    locked = s.IntegerField()


class QueuePageSerializer(s.Serializer):
    count = s.IntegerField()
    results = QueueSerializer(many=True)


# --- messages -------------------------------------------------------------------------------

class RefersToSerializer(s.Serializer):
    msg_id = _hex48()
    action = s.ChoiceField(["cancel", "replace", "reprioritise"])


class MessageInSerializer(s.Serializer):
    """A message as a client sends it: ``body`` or ``body_base64``, not both."""

    body = s.CharField(required=False, allow_null=True, allow_blank=True)
    body_base64 = Base64Field(required=False, allow_null=True)
    correl_id = _hex48(required=False, allow_null=True)
    group_id = _hex48(required=False, allow_null=True)
    msg_type = s.ChoiceField(MessageType.values, required=False, allow_null=True)
    priority = s.IntegerField(min_value=0, max_value=9, required=False, allow_null=True)
    persistence = s.ChoiceField(["persistent", "non_persistent", "queue_default"], required=False, allow_null=True)
    expiry_ms = s.IntegerField(min_value=1, required=False, allow_null=True)
    format = s.CharField(max_length=100, required=False, allow_null=True, allow_blank=True)
    reply_to_queue = _name(required=False, allow_null=True)
    reply_to_broker = _name(required=False, allow_null=True)
    report = s.ListField(child=s.ChoiceField(["coa", "cod", "expiry", "exception"]), required=False,
                         allow_null=True, help_text="Reports need reply_to_queue.")
    properties = ObjectField(required=False, allow_null=True)
    refers_to = RefersToSerializer(required=False, allow_null=True,
                                   help_text="A reactive message: acts on an earlier message instead of being queued.")


class PutOptionsMixin(s.Serializer):
    transaction = s.CharField(required=False, allow_null=True, help_text="Put under this unit of work.")
    syncpoint = s.ChoiceField(["yes", "no", "if_persistent"], required=False, allow_null=True)
    connection = s.CharField(required=False, allow_null=True, help_text="A connection id (conn_id).")
    put_application = s.CharField(required=False, allow_null=True, max_length=100)


class PutRequestSerializer(MessageInSerializer, PutOptionsMixin):
    """One message (its fields at the top level), or a batch as ``messages``; with the put
    options."""

    messages = MessageInSerializer(many=True, required=False, help_text="A batch: these messages, all or none.")


class MessageSerializer(s.Serializer):
    """A stored message."""

    msg_id = s.CharField()
    correl_id = s.CharField(allow_null=True)
    group_id = s.CharField(allow_null=True)
    msg_type = s.ChoiceField(MessageType.values)
    priority = s.IntegerField()
    persistence = s.ChoiceField(Persistence.values)
    expires_at = s.DateTimeField(allow_null=True)
    expiry_ms = s.IntegerField(allow_null=True, help_text="Milliseconds left before it expires.")
    format = s.CharField(allow_null=True)
    reply_to_queue = s.CharField(allow_null=True)
    reply_to_broker = s.CharField(allow_null=True)
    report = s.ListField(child=s.CharField(), allow_null=True)
    properties = ObjectField(allow_null=True)
    refers_to = ObjectField(allow_null=True)
    put_time = s.DateTimeField()
    put_application = s.CharField(allow_null=True)
    backout_count = s.IntegerField()
    delivery_count = s.IntegerField()
    dead_letter_reason = s.CharField(allow_null=True)
    dead_letter_from = s.CharField(allow_null=True)
    transmission_header = ObjectField(allow_null=True)
    feedback = s.CharField(allow_null=True, help_text="On a report: coa, cod, expiry or exception.")
    lock_token = s.CharField(allow_null=True)
    locked_until = s.DateTimeField(allow_null=True)
    queue = s.CharField()
    broker = s.CharField()
    body = s.CharField(allow_null=True, allow_blank=True, help_text="The body when it is valid UTF-8.")
    body_base64 = Base64Field()


class PutOneSerializer(MessageSerializer):
    transaction = s.CharField(allow_null=True)


class PutBatchSerializer(s.Serializer):
    messages = MessageSerializer(many=True)
    transaction = s.CharField(allow_null=True)


PUT_RESULT = PolymorphicProxySerializer(
    component_name="PutResult", serializers=[PutOneSerializer, PutBatchSerializer], resource_type_field_name=None,
)


class BrowseSerializer(s.Serializer):
    messages = MessageSerializer(many=True)
    cursor = s.CharField(help_text="Browse on from here.")


BROWSE_PARAMETERS = [
    OpenApiParameter("cursor", str, description="Where the last page ended."),
    OpenApiParameter("limit", int, description=f"Messages to return (1 to {settings.BATON_MAX_BATCH})."),
    OpenApiParameter("ordered", bool, description="Reliable browse in the queue's read order."),
]


class GetRequestSerializer(s.Serializer):
    wait = s.FloatField(min_value=0, required=False, help_text="Seconds to wait for a message.")
    transaction = s.CharField(required=False, allow_null=True)
    syncpoint = s.ChoiceField(["yes", "no"], required=False, allow_null=True)
    connection = s.CharField(required=False, allow_null=True)
    preemptive = s.BooleanField(required=False)
    ordered = s.BooleanField(required=False)
    msg_id = _hex48(required=False, allow_null=True)
    correl_id = _hex48(required=False, allow_null=True)
    group_id = _hex48(required=False, allow_null=True)
    mode = s.ChoiceField(["destructive", "browse", "peek_lock"], required=False, allow_null=True)
    batch = s.IntegerField(min_value=1, max_value=settings.BATON_MAX_BATCH, required=False)
    commit_first = s.BooleanField(required=False)
    access = s.ChoiceField(Access.values, required=False, allow_null=True)


class GetResultSerializer(s.Serializer):
    messages = MessageSerializer(many=True)
    transaction = s.CharField(allow_null=True)
    reason = s.CharField(required=False, allow_null=True,
                         help_text="When no message came: empty, no_match, next_in_order_in_flight, ...")


# --- peek-locks -----------------------------------------------------------------------------

class LockCompleteRequestSerializer(s.Serializer):
    transaction = s.CharField(required=False, allow_null=True)


class LockDeadLetterRequestSerializer(s.Serializer):
    reason = s.CharField(min_length=1, max_length=200)


class LockOutcomeSerializer(s.Serializer):
    lock_token = s.CharField()
    outcome = s.ChoiceField(["completed", "pending_commit", "available", "dead_lettered"])


class LockRenewedSerializer(s.Serializer):
    lock_token = s.CharField()
    locked_until = s.DateTimeField()


class LockDeadLetteredSerializer(LockOutcomeSerializer):
    queue = s.CharField(help_text="The queue the message was moved to.")


# --- transactions ---------------------------------------------------------------------------

class TransactionBeginSerializer(s.Serializer):
    timeout_ms = s.IntegerField(min_value=1, max_value=86_400_000, required=False,
                                help_text="Rolled back if still open after this long; default: the broker's.")


class TransactionSerializer(s.Serializer):
    id = s.CharField()
    broker = s.CharField()
    state = s.ChoiceField(TransactionState.values)
    reason = s.CharField(allow_null=True)
    cause = s.CharField(allow_null=True, help_text="The upstream whose rollback cascaded here.")
    upstream = s.ListField(child=s.CharField())
    downstream = s.ListField(child=s.CharField())
    created_at = s.DateTimeField()
    deadline_at = s.DateTimeField(allow_null=True)
    commit_requested_at = s.DateTimeField(allow_null=True)
    resolved_at = s.DateTimeField(allow_null=True)


class WaitSerializer(s.Serializer):
    wait = s.FloatField(min_value=0, required=False, help_text="Seconds to wait for the outcome.")


class CommittedSerializer(s.Serializer):
    id = s.CharField()
    state = s.ChoiceField(["committed"])


class CommitHeldSerializer(s.Serializer):
    id = s.CharField()
    state = s.ChoiceField(["commit_held"])
    waiting_on = s.ListField(child=s.CharField(), help_text="The open upstream transactions.")


class RolledBackSerializer(s.Serializer):
    id = s.CharField()
    state = s.ChoiceField(["rolled_back"])
    reason = s.CharField(allow_blank=True, allow_null=True)
    cascaded = s.ListField(child=s.CharField(), help_text="Downstream transactions backed out with it.")


class CheckResultSerializer(s.Serializer):
    id = s.CharField()
    result = s.ChoiceField(["ready", "pending", "backed_out"])
    waiting_on = s.ListField(child=s.CharField())
    reason = s.CharField(required=False, allow_blank=True)


class GraphNodeSerializer(s.Serializer):
    id = s.CharField()
    broker = s.CharField()
    state = s.ChoiceField(TransactionState.values)
    reason = s.CharField(allow_null=True)
    created_at = s.DateTimeField()
    resolved_at = s.DateTimeField(allow_null=True)
    yours = s.BooleanField(help_text="Whether you may act on it: you began it, administer its broker, or are a superuser.")


class GraphEdgeSerializer(s.Serializer):
    upstream = s.CharField()
    downstream = s.CharField()
    resource = s.CharField()


class TransactionGraphSerializer(s.Serializer):
    broker = s.CharField()
    nodes = GraphNodeSerializer(many=True)
    edges = GraphEdgeSerializer(many=True)


# --- connections ----------------------------------------------------------------------------

class ConnectionOpenSerializer(s.Serializer):
    client_name = s.CharField(min_length=1, max_length=100)


class ConnectionSerializer(s.Serializer):
    conn_id = s.CharField()
    broker = s.CharField()
    client_name = s.CharField()
    last_put_msg_id = s.CharField(allow_null=True)
    last_got_msg_id = s.CharField(allow_null=True)
    current_transaction = s.CharField(allow_null=True)
    created_at = s.DateTimeField()


# --- request examples (the docs show them; schemathesis sends them first) -------------------

def _example(name: str, value: dict) -> OpenApiExample:
    return OpenApiExample(name, value=value, request_only=True)


BROKER_EXAMPLES = [_example("A broker", {"name": "QM2", "description": "Orders", "transaction_timeout_ms": 60000})]
BROKER_CHANGE_EXAMPLES = [_example("A new timeout", {"transaction_timeout_ms": 30000})]
QUEUE_EXAMPLES = [
    _example("A local queue", {"name": "ORDERS", "max_depth": 10000, "default_priority": 4}),
    _example("A remote queue", {"name": "PAYMENTS", "kind": "remote", "remote_broker": "QM2",
                                "remote_queue": "PAYMENTS.IN", "transmission_queue": "QM2"}),
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
DEAD_LETTER_EXAMPLES = [_example("Cannot process", {"reason": "unparseable order"})]


# --- the operations (the views wear these) --------------------------------------------------

_UNSET = object()


def _operation(operation_id: str, tag: str, ok: dict, *errors: int, parameters=(), request=_UNSET,
               examples=None, summary: str | None = None):
    kwargs = {"request": request} if request is not _UNSET else {}
    return extend_schema(operation_id=operation_id, tags=[tag], parameters=list(parameters), summary=summary,
                         examples=examples, responses=responses(ok, *errors), **kwargs)


brokers_list = _operation("brokers_list", "brokers", {200: BrokerPageSerializer}, 400, parameters=PAGE,
                          summary="The brokers the caller may see")
brokers_define = _operation("brokers_define", "brokers", {201: BrokerSerializer}, 400, 409, 413,
                            request=BrokerDefinitionSerializer, examples=BROKER_EXAMPLES,
                            summary="Define a broker with its dead-letter queue (superusers)")
brokers_display = _operation("brokers_display", "brokers", {200: BrokerSerializer}, 404, parameters=[BROKER])
brokers_alter = _operation("brokers_alter", "brokers", {200: BrokerSerializer}, 400, 404, 413, parameters=[BROKER],
                           request=BrokerChangeSerializer, examples=BROKER_CHANGE_EXAMPLES)
brokers_delete = _operation("brokers_delete", "brokers", {204: NO_CONTENT}, 400, 404, 409,
                            parameters=[BROKER, PURGE], request=None)

queues_list = _operation("queues_list", "queues", {200: QueuePageSerializer}, 400, 404, parameters=[BROKER, *PAGE],
                         summary="The broker's queues the caller may see")
queues_define = _operation("queues_define", "queues", {201: QueueSerializer}, 400, 404, 409, 413, parameters=[BROKER],
                           request=QueueDefinitionSerializer, examples=QUEUE_EXAMPLES)
queues_display = _operation("queues_display", "queues", {200: QueueSerializer}, 404, parameters=[BROKER, QUEUE])
queues_alter = _operation("queues_alter", "queues", {200: QueueSerializer}, 400, 404, 409, 413,
                          parameters=[BROKER, QUEUE], request=QueueChangeSerializer, examples=QUEUE_CHANGE_EXAMPLES)
queues_delete = _operation("queues_delete", "queues", {204: NO_CONTENT}, 400, 404, 409,
                           parameters=[BROKER, QUEUE, PURGE], request=None)

messages_browse = _operation("messages_browse", "messages", {200: BrowseSerializer}, 400, 404,
                             parameters=[BROKER, QUEUE, *BROWSE_PARAMETERS],
                             summary="Browse: look at messages without removing them")
messages_put = _operation("messages_put", "messages", {201: PUT_RESULT}, 400, 404, 409, 413, parameters=[BROKER, QUEUE],
                          request=PutRequestSerializer, examples=PUT_EXAMPLES,
                          summary="Put one message, or a batch as messages")
messages_get = _operation("messages_get", "messages", {200: GetResultSerializer}, 400, 404, 409, 413,
                          parameters=[BROKER, QUEUE], request=GetRequestSerializer, examples=GET_EXAMPLES,
                          summary="Get messages (destructive, browse or peek-lock)")

locks_complete = _operation("locks_complete", "locks", {200: LockOutcomeSerializer}, 400, 404, 409, 410, 413,
                            parameters=[TOKEN], request=LockCompleteRequestSerializer)
locks_abandon = _operation("locks_abandon", "locks", {200: LockOutcomeSerializer}, 404, 409, 410,
                           parameters=[TOKEN], request=None)
locks_renew = _operation("locks_renew", "locks", {200: LockRenewedSerializer}, 404, 409, 410,
                         parameters=[TOKEN], request=None)
locks_dead_letter = _operation("locks_dead_letter", "locks", {200: LockDeadLetteredSerializer}, 400, 404, 409, 410, 413,
                               parameters=[TOKEN], request=LockDeadLetterRequestSerializer,
                               examples=DEAD_LETTER_EXAMPLES)

transactions_begin = _operation("transactions_begin", "transactions", {201: TransactionSerializer}, 400, 404, 413,
                                parameters=[BROKER], request=TransactionBeginSerializer, examples=BEGIN_EXAMPLES)
transactions_graph = _operation("transactions_graph", "transactions", {200: TransactionGraphSerializer}, 404,
                                parameters=[BROKER], summary="The broker's live transaction graph")
transactions_display = _operation("transactions_display", "transactions", {200: TransactionSerializer}, 404,
                                  parameters=[TRANSACTION])
transactions_commit = _operation("transactions_commit", "transactions",
                                 {200: CommittedSerializer, 202: CommitHeldSerializer}, 400, 404, 409, 413,
                                 parameters=[TRANSACTION], request=WaitSerializer, examples=WAIT_EXAMPLES)
transactions_rollback = _operation("transactions_rollback", "transactions", {200: RolledBackSerializer}, 404, 409,
                                   parameters=[TRANSACTION], request=None)
transactions_check = _operation("transactions_check", "transactions", {200: CheckResultSerializer}, 400, 404, 413,
                                parameters=[TRANSACTION], request=WaitSerializer, examples=WAIT_EXAMPLES,
                                summary="The ready-check")

connections_open = _operation("connections_open", "connections", {201: ConnectionSerializer}, 400, 404, 413,
                              parameters=[BROKER], request=ConnectionOpenSerializer, examples=CONNECTION_EXAMPLES)
connections_display = _operation("connections_display", "connections", {200: ConnectionSerializer}, 404,
                                 parameters=[CONNECTION])
connections_close = _operation("connections_close", "connections", {204: NO_CONTENT}, 404, parameters=[CONNECTION],
                               request=None, summary="Close: an open unit of work it began is rolled back")

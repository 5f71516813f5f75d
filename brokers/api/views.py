"""REST views: check the caller's permission (brokers.permissions), validate the request,
call one service, render. See API.md for the contract; brokers.api.schema describes every
operation's JSON for the OpenAPI schema."""
from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import FieldDoesNotExist
from django.db import models
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from transactions.selectors import transaction_graph

from .. import permissions as may
from ..exceptions import InvalidInput
from ..models import Broker, Queue
from ..selectors import broker_get, broker_list, queue_depths, queue_get, queue_list
from ..services.brokers import broker_alter, broker_define, broker_delete
from ..services.queues import queue_alter, queue_define, queue_delete
from . import operations as ops, schema as doc
from .render import broker_render, queue_render


# --- request helpers ----------------------------------------------------------------------

def _body(request: Request) -> dict[str, Any]:
    data = request.data
    if not request.body if hasattr(request, "body") else False:
        return {}
    if hasattr(data, "dict") and not data:  # no body at all: an empty QueryDict
        return {}
    if not isinstance(data, dict):
        raise InvalidInput("The request body must be a JSON object.", errors={"body": ["Must be an object."]})
    return data


def _bool(data: dict, name: str, default: bool = False) -> bool:
    value = data.get(name, default)
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in {"true", "false", "1", "0", "yes", "no"}:
        return value.lower() in {"true", "1", "yes"}
    raise InvalidInput(f"{name} must be true or false.", errors={name: ["Must be a boolean."]})


def _number(data: dict, name: str, default: float, *, low: float, high: float, whole: bool = False) -> Any:
    value = data.get(name, default)
    if value is None:
        value = default
    if isinstance(value, str):
        try:
            value = float(value) if not whole else int(value)
        except ValueError:
            pass
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and (not whole or float(value).is_integer())
    if not ok or not low <= value <= high:
        kind = "a whole number" if whole else "a number"
        raise InvalidInput(f"{name} must be {kind} from {low:g} to {high:g}.", errors={name: ["Out of range."]})
    return int(value) if whole else float(value)


def _page(request: Request, rows: list[dict]) -> dict[str, Any]:
    params = request.query_params
    limit = _number(params, "limit", settings.BATON_API_PAGE_SIZE, low=1, high=1000, whole=True)
    offset = _number(params, "offset", 0, low=0, high=10**9, whole=True)
    return {"count": len(rows), "results": rows[offset:offset + limit]}


_JSON_TYPES: list[tuple[type, type, str]] = [
    (models.BooleanField, bool, "Must be true or false."),
    (models.IntegerField, int, "Must be a whole number."),
    (models.CharField, str, "Must be a string."),
]


def _definition(data: dict[str, Any], model: type[models.Model]) -> dict[str, Any]:
    """A definition's fields, each of the JSON type its model field holds: Django's model
    validation lets ``null``, ``{}`` or ``[]`` through for a field that may be blank, and
    takes ``true`` for 1. Unknown fields are left to the service, which names them."""
    errors: dict[str, list[str]] = {}
    for name, value in data.items():
        try:
            field = model._meta.get_field(name)
        except FieldDoesNotExist:
            continue
        if value is None:
            if not field.null:
                errors[name] = ["May not be null."]
            continue
        for field_class, json_type, problem in _JSON_TYPES:
            if isinstance(field, field_class):
                if not isinstance(value, json_type) or (json_type is int and isinstance(value, bool)):
                    errors[name] = [problem]
                break
    if errors:
        raise InvalidInput("The request is not valid.", errors=errors)
    return data


def _changes(request: Request, model: type[models.Model]) -> dict[str, Any]:
    """An alteration's fields. Names are how brokers and queues are addressed: no renames."""
    data = dict(_body(request))
    if "name" in data:
        raise InvalidInput("Names cannot be changed; define a new object instead.", errors={"name": ["Cannot be altered."]})
    return _definition(data, model)


def _purge(request: Request) -> bool:
    return _bool(request.query_params, "purge")


# --- brokers and queues -------------------------------------------------------------------

class BrokerListView(APIView):
    @doc.brokers_list
    def get(self, request: Request) -> Response:
        return Response(_page(request, [broker_render(b) for b in may.brokers_visible(request.user, broker_list())]))

    @doc.brokers_define
    def post(self, request: Request) -> Response:
        may.require_broker_define(request.user)
        data = dict(_body(request))
        name = data.pop("name", None)
        if not isinstance(name, str):
            raise InvalidInput("A broker needs a name.", errors={"name": ["Required."]})
        return Response(broker_render(broker_define(name=name, **_definition(data, Broker))), status=201)


class BrokerDetailView(APIView):
    @doc.brokers_display
    def get(self, request: Request, broker: str) -> Response:
        may.require_broker_display(request.user, broker=broker)
        return Response(broker_render(broker_get(name=broker)))

    @doc.brokers_alter
    def patch(self, request: Request, broker: str) -> Response:
        may.require_broker_admin(request.user, broker=broker)
        return Response(broker_render(broker_alter(name=broker, **_changes(request, Broker))))

    @doc.brokers_delete
    def delete(self, request: Request, broker: str) -> Response:
        may.require_broker_admin(request.user, broker=broker)
        broker_delete(name=broker, purge=_purge(request))
        return Response(status=204)


class QueueListView(APIView):
    @doc.queues_list
    def get(self, request: Request, broker: str) -> Response:
        may.require_broker_display(request.user, broker=broker)
        queues = may.queues_visible(request.user, broker=broker, queues=queue_list(broker=broker))
        depths = queue_depths(queue_ids=[q.pk for q in queues])
        return Response(_page(request, [queue_render(q, depths[q.pk]) for q in queues]))

    @doc.queues_define
    def post(self, request: Request, broker: str) -> Response:
        may.require_broker_admin(request.user, broker=broker)
        data = dict(_body(request))
        name = data.pop("name", None)
        if not isinstance(name, str):
            raise InvalidInput("A queue needs a name.", errors={"name": ["Required."]})
        queue = queue_define(broker=broker, name=name, **_definition(data, Queue))
        return Response(queue_render(queue, queue_depths(queue_ids=[queue.pk])[queue.pk]), status=201)


class QueueDetailView(APIView):
    @doc.queues_display
    def get(self, request: Request, broker: str, queue: str) -> Response:
        may.require_queue_display(request.user, broker=broker, queue=queue)
        q = queue_get(broker=broker, name=queue)
        return Response(queue_render(q, queue_depths(queue_ids=[q.pk])[q.pk]))

    @doc.queues_alter
    def patch(self, request: Request, broker: str, queue: str) -> Response:
        may.require_queue_admin(request.user, broker=broker, queue=queue)
        q = queue_alter(broker=broker, name=queue, **_changes(request, Queue))
        return Response(queue_render(q, queue_depths(queue_ids=[q.pk])[q.pk]))

    @doc.queues_delete
    def delete(self, request: Request, broker: str, queue: str) -> Response:
        may.require_queue_admin(request.user, broker=broker, queue=queue)
        queue_delete(broker=broker, name=queue, purge=_purge(request))
        return Response(status=204)


# --- operations defined once (brokers.api.operations): messages, locks, transactions ------

#: Path parameter -> the operation's field.
_PATH_FIELDS = {"transaction_id": "transaction", "token": "lock_token"}


def _run(operation: type[ops.Operation], request: Request, data: dict[str, Any] | None = None,
         **path: str) -> Response:
    """Validate the body (or ``data``) with the path's fields, perform, render."""
    data = dict(_body(request) if data is None else data)
    for name, value in path.items():
        name = _PATH_FIELDS.get(name, name)
        if name in data:
            raise InvalidInput("The request is not valid.", errors={name: ["Given in the path; not in the body."]})
        data[name] = value
    status, body = operation.run(request.user, data)
    return Response(body if status != 204 else None, status=status)


class MessagesView(APIView):
    """GET browses, POST puts."""

    @doc.operation(ops.MessageBrowse, "messages_browse", "messages", 400, 404, query=True,
                   summary="Browse: look at messages without removing them")
    def get(self, request: Request, broker: str, queue: str) -> Response:
        return _run(ops.MessageBrowse, request, dict(request.query_params.items()), broker=broker, queue=queue)

    @doc.operation(ops.MessagePut, "messages_put", "messages", 400, 404, 409, 413, examples=doc.PUT_EXAMPLES,
                   summary="Put one message, or a batch as messages")
    def post(self, request: Request, broker: str, queue: str) -> Response:
        return _run(ops.MessagePut, request, broker=broker, queue=queue)


class GetView(APIView):
    @doc.operation(ops.MessageGet, "messages_get", "messages", 400, 404, 409, 413, examples=doc.GET_EXAMPLES,
                   summary="Get messages (destructive, browse or peek-lock)")
    def post(self, request: Request, broker: str, queue: str) -> Response:
        return _run(ops.MessageGet, request, broker=broker, queue=queue)


class LockCompleteView(APIView):
    @doc.operation(ops.LockComplete, "locks_complete", "locks", 400, 404, 409, 410, 413)
    def post(self, request: Request, token: str) -> Response:
        return _run(ops.LockComplete, request, token=token)


class LockAbandonView(APIView):
    @doc.operation(ops.LockAbandon, "locks_abandon", "locks", 404, 409, 410)
    def post(self, request: Request, token: str) -> Response:
        return _run(ops.LockAbandon, request, token=token)


class LockRenewView(APIView):
    @doc.operation(ops.LockRenew, "locks_renew", "locks", 404, 409, 410)
    def post(self, request: Request, token: str) -> Response:
        return _run(ops.LockRenew, request, token=token)


class LockDeadLetterView(APIView):
    @doc.operation(ops.LockDeadLetter, "locks_dead_letter", "locks", 400, 404, 409, 410, 413,
                   examples=doc.DEAD_LETTER_EXAMPLES)
    def post(self, request: Request, token: str) -> Response:
        return _run(ops.LockDeadLetter, request, token=token)


class TransactionBeginView(APIView):
    @doc.operation(ops.TransactionBegin, "transactions_begin", "transactions", 400, 404, 413,
                   examples=doc.BEGIN_EXAMPLES)
    def post(self, request: Request, broker: str) -> Response:
        return _run(ops.TransactionBegin, request, broker=broker)


class TransactionGraphView(APIView):
    """The broker's live transaction graph: open and recent transactions and their links."""

    @doc.transactions_graph
    def get(self, request: Request, broker: str) -> Response:
        may.require_transaction_begin(request.user, broker=broker)
        return Response(transaction_graph(broker=broker_get(name=broker).name))


class TransactionDetailView(APIView):
    @doc.operation(ops.TransactionDisplay, "transactions_display", "transactions", 404)
    def get(self, request: Request, transaction_id: str) -> Response:
        return _run(ops.TransactionDisplay, request, {}, transaction_id=transaction_id)


class TransactionCommitView(APIView):
    @doc.operation(ops.TransactionCommit, "transactions_commit", "transactions", 400, 404, 409, 413,
                   examples=doc.WAIT_EXAMPLES)
    def post(self, request: Request, transaction_id: str) -> Response:
        return _run(ops.TransactionCommit, request, transaction_id=transaction_id)


class TransactionRollbackView(APIView):
    @doc.operation(ops.TransactionRollback, "transactions_rollback", "transactions", 404, 409)
    def post(self, request: Request, transaction_id: str) -> Response:
        return _run(ops.TransactionRollback, request, transaction_id=transaction_id)


class TransactionCheckView(APIView):
    @doc.operation(ops.TransactionCheck, "transactions_check", "transactions", 400, 404, 413,
                   examples=doc.WAIT_EXAMPLES, summary="The ready-check")
    def post(self, request: Request, transaction_id: str) -> Response:
        return _run(ops.TransactionCheck, request, transaction_id=transaction_id)


# --- connections --------------------------------------------------------------------------

class ConnectionOpenView(APIView):
    @doc.operation(ops.ConnectionOpen, "connections_open", "connections", 400, 404, 413,
                   examples=doc.CONNECTION_EXAMPLES)
    def post(self, request: Request, broker: str) -> Response:
        return _run(ops.ConnectionOpen, request, broker=broker)


class ConnectionDetailView(APIView):
    @doc.operation(ops.ConnectionDisplay, "connections_display", "connections", 404)
    def get(self, request: Request, conn_id: str) -> Response:
        return _run(ops.ConnectionDisplay, request, {}, conn_id=conn_id)

    @doc.operation(ops.ConnectionClose, "connections_close", "connections", 404,
                   summary="Close: an open unit of work it began is rolled back")
    def delete(self, request: Request, conn_id: str) -> Response:
        return _run(ops.ConnectionClose, request, {}, conn_id=conn_id)

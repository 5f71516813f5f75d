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

from transactions.manager import transaction_begin, transaction_check, transaction_commit, transaction_rollback
from transactions.selectors import transaction_get, transaction_graph, transaction_neighbours

from .. import permissions as may
from ..exceptions import InvalidInput
from ..models import Broker, Queue
from ..selectors import broker_get, broker_list, connection_get, queue_depths, queue_get, queue_list
from ..services.brokers import broker_alter, broker_define, broker_delete
from ..services.connections import connection_close, connection_open, connection_view
from ..services.message_input import message_input_parse, message_render
from ..services.locks import lock_abandon, lock_complete, lock_dead_letter, lock_renew
from ..services.messages import message_browse, message_get, message_put
from .dedup import duplicate_render
from ..services.queues import queue_alter, queue_define, queue_delete
from . import schema as doc
from .render import broker_render, connection_render, queue_render, transaction_render


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


def _text(data: dict, name: str) -> str | None:
    value = data.get(name)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"{name} must be a string.", errors={name: ["Must be a string."]})
    return value


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


# --- messages -----------------------------------------------------------------------------

class MessagesView(APIView):
    """GET browses, POST puts."""

    @doc.messages_browse
    def get(self, request: Request, broker: str, queue: str) -> Response:
        may.require_browse(request.user, broker=broker, queue=queue)
        params = request.query_params
        result = message_browse(
            broker=broker, queue=queue, cursor=params.get("cursor") or None, ordered=_bool(params, "ordered"),
            limit=_number(params, "limit", 50, low=1, high=settings.BATON_MAX_BATCH, whole=True),
        )
        b, q = result.queue.broker.name, result.queue.name
        return Response({"messages": [message_render(m, broker=b, queue=q) for m in result.messages], "cursor": result.cursor})

    @doc.messages_put
    def post(self, request: Request, broker: str, queue: str) -> Response:
        may.require_put(request.user, broker=broker, queue=queue)
        data = _body(request)
        if "messages" in data:
            raw = data["messages"]
            if not isinstance(raw, list):
                raise InvalidInput("messages must be a list.", errors={"messages": ["Must be a list."]})
            messages = [message_input_parse(m, where=f"messages[{i}].") for i, m in enumerate(raw)]
        else:
            single = {k: v for k, v in data.items() if k not in {"transaction", "syncpoint", "connection", "put_application"}}
            messages = [message_input_parse(single)]
        connection_id = _text(data, "connection")
        may.require_connection_use(request.user, conn_id=connection_id)
        result = message_put(
            broker=broker, queue=queue, messages=messages, transaction_id=_text(data, "transaction"),
            syncpoint=_text(data, "syncpoint"), connection_id=connection_id,
            put_application=(_text(data, "put_application") or getattr(request.user, "username", ""))[:100],
        )
        b, q = result.queue.broker.name, result.queue.name
        rendered = [message_render(m, broker=b, queue=q) for m in result.messages]
        if "messages" not in data and result.duplicates:  # duplicate detection: skipped, 200 (brokers/api/dedup.py)
            return Response(duplicate_render(result.duplicates[0], transaction=result.transaction_id), status=200)
        body: dict[str, Any] = {"messages": rendered} if "messages" in data else dict(rendered[0])
        if "messages" in data:
            body["duplicates"] = [duplicate_render(d) for d in result.duplicates]
        body["transaction"] = result.transaction_id
        return Response(body, status=201)


GET_OPTIONS = {
    "wait", "transaction", "preemptive", "ordered", "msg_id", "correl_id", "group_id", "mode", "batch",
    "commit_first", "syncpoint", "connection", "access",
}


class GetView(APIView):
    @doc.messages_get
    def post(self, request: Request, broker: str, queue: str) -> Response:
        may.require_get(request.user, broker=broker, queue=queue)
        data = _body(request)
        unknown = sorted(set(data) - GET_OPTIONS)
        if unknown:
            raise InvalidInput("The request is not valid.", errors={name: ["Unknown field."] for name in unknown})
        connection_id = _text(data, "connection")
        may.require_connection_use(request.user, conn_id=connection_id)
        result = message_get(
            broker=broker, queue=queue, transaction_id=_text(data, "transaction"), syncpoint=_text(data, "syncpoint"),
            connection_id=connection_id,
            wait=_number(data, "wait", 0, low=0, high=settings.BATON_MAX_WAIT_S),
            batch=_number(data, "batch", 1, low=1, high=settings.BATON_MAX_BATCH, whole=True),
            msg_id=_text(data, "msg_id"), correl_id=_text(data, "correl_id"), group_id=_text(data, "group_id"),
            mode=_text(data, "mode") or "destructive", commit_first=_bool(data, "commit_first"),
            preemptive=_bool(data, "preemptive"), ordered=_bool(data, "ordered"), access=_text(data, "access"),
        )
        b, q = result.queue.broker.name, result.queue.name
        body: dict[str, Any] = {"messages": [message_render(m, broker=b, queue=q) for m in result.messages],
                                "transaction": result.transaction_id}
        if not result.messages:
            body["reason"] = result.reason
        return Response(body)


# --- peek-locks --------------------------------------------------------------------------

class LockCompleteView(APIView):
    @doc.locks_complete
    def post(self, request: Request, token: str) -> Response:
        may.require_lock(request.user, token=token)
        outcome = lock_complete(token=token, transaction_id=_text(_body(request), "transaction"))
        return Response({"lock_token": token, "outcome": outcome})


class LockAbandonView(APIView):
    @doc.locks_abandon
    def post(self, request: Request, token: str) -> Response:
        may.require_lock(request.user, token=token)
        return Response({"lock_token": token, "outcome": lock_abandon(token=token)})


class LockRenewView(APIView):
    @doc.locks_renew
    def post(self, request: Request, token: str) -> Response:
        may.require_lock(request.user, token=token)
        message = lock_renew(token=token)
        return Response({"lock_token": token, "locked_until": message.locked_until.isoformat()})


class LockDeadLetterView(APIView):
    @doc.locks_dead_letter
    def post(self, request: Request, token: str) -> Response:
        may.require_lock(request.user, token=token)
        message = lock_dead_letter(token=token, reason=_body(request).get("reason"))
        return Response({"lock_token": token, "outcome": "dead_lettered", "queue": message.queue.name})


# --- transactions -------------------------------------------------------------------------

def _transaction_body(transaction_id: str) -> dict[str, Any]:
    upstream, downstream = transaction_neighbours(transaction_id=transaction_id)
    return transaction_render(transaction_get(transaction_id=transaction_id), upstream=upstream, downstream=downstream)


class TransactionBeginView(APIView):
    @doc.transactions_begin
    def post(self, request: Request, broker: str) -> Response:
        may.require_transaction_begin(request.user, broker=broker)
        data = _body(request)
        owner = broker_get(name=broker)
        timeout_ms = owner.transaction_timeout_ms  # the broker's: 0 for no deadline
        if data.get("timeout_ms") is not None:
            timeout_ms = _number(data, "timeout_ms", timeout_ms, low=1, high=86_400_000, whole=True)
        txn = transaction_begin(broker=owner.name, timeout_ms=timeout_ms)
        return Response(transaction_render(txn, upstream=[], downstream=[]), status=201)  # new: no links yet


class TransactionGraphView(APIView):
    """The broker's live transaction graph: open and recent transactions and their links."""

    @doc.transactions_graph
    def get(self, request: Request, broker: str) -> Response:
        may.require_transaction_begin(request.user, broker=broker)
        return Response(transaction_graph(broker=broker_get(name=broker).name))


class TransactionDetailView(APIView):
    @doc.transactions_display
    def get(self, request: Request, transaction_id: str) -> Response:
        may.require_transaction(request.user, transaction_id=transaction_id)
        return Response(_transaction_body(transaction_id))


class TransactionCommitView(APIView):
    @doc.transactions_commit
    def post(self, request: Request, transaction_id: str) -> Response:
        may.require_transaction(request.user, transaction_id=transaction_id)
        wait = _number(_body(request), "wait", 0, low=0, high=settings.BATON_MAX_WAIT_S)
        outcome = transaction_commit(transaction_id=transaction_id, wait=wait)
        if outcome.state == "committed":
            return Response({"id": transaction_id, "state": "committed"})
        return Response({"id": transaction_id, "state": outcome.state, "waiting_on": outcome.waiting_on}, status=202)


class TransactionRollbackView(APIView):
    @doc.transactions_rollback
    def post(self, request: Request, transaction_id: str) -> Response:
        may.require_transaction(request.user, transaction_id=transaction_id)
        outcome = transaction_rollback(transaction_id=transaction_id)
        return Response({"id": transaction_id, "state": outcome.transaction.state,
                         "reason": outcome.transaction.reason, "cascaded": outcome.cascaded})


class TransactionCheckView(APIView):
    @doc.transactions_check
    def post(self, request: Request, transaction_id: str) -> Response:
        may.require_transaction(request.user, transaction_id=transaction_id)
        wait = _number(_body(request), "wait", 0, low=0, high=settings.BATON_MAX_WAIT_S)
        outcome = transaction_check(transaction_id=transaction_id, wait=wait)
        body: dict[str, Any] = {"id": transaction_id, "result": outcome.result, "waiting_on": outcome.waiting_on}
        if outcome.reason:
            body["reason"] = outcome.reason
        return Response(body)


# --- connections --------------------------------------------------------------------------

class ConnectionOpenView(APIView):
    @doc.connections_open
    def post(self, request: Request, broker: str) -> Response:
        may.require_connection_open(request.user, broker=broker)
        view = connection_open(broker=broker, client_name=_body(request).get("client_name"))
        return Response(connection_render(view), status=201)


class ConnectionDetailView(APIView):
    @doc.connections_display
    def get(self, request: Request, conn_id: str) -> Response:
        may.require_connection(request.user, conn_id=conn_id)
        return Response(connection_render(connection_view(connection=connection_get(conn_id=conn_id))))

    @doc.connections_close
    def delete(self, request: Request, conn_id: str) -> Response:
        may.require_connection(request.user, conn_id=conn_id)
        connection_close(conn_id=conn_id)
        return Response(status=204)

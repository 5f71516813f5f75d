"""REST views: each method hands its request (the body, or the query for GETs and DELETEs,
with the path's fields) to one operation of ``brokers.api.operations`` — the definition
the session and the OpenAPI schema use too — and renders what it answers."""

from __future__ import annotations

from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from transactions.selectors import transaction_graph

from .. import permissions as may
from ..selectors import broker_get
from . import operations as ops, schema as doc
from .operations.rest import operation_response as _run, request_query as _query


# --- brokers and queues -------------------------------------------------------------------


class BrokerListView(APIView):
    @doc.operation(ops.BrokerList, "brokers_list", "brokers", 400, query=True)
    def get(self, request: Request) -> Response:
        return _run(ops.BrokerList, request, _query(request))

    @doc.operation(ops.BrokerDefine, "brokers_define", "brokers", 400, 409, 413, examples=doc.BROKER_EXAMPLES)
    def post(self, request: Request) -> Response:
        return _run(ops.BrokerDefine, request)


class BrokerDetailView(APIView):
    @doc.operation(ops.BrokerDisplay, "brokers_display", "brokers", 404)
    def get(self, request: Request, broker: str) -> Response:
        return _run(ops.BrokerDisplay, request, {}, broker=broker)

    @doc.operation(ops.BrokerAlter, "brokers_alter", "brokers", 400, 404, 413, examples=doc.BROKER_CHANGE_EXAMPLES)
    def patch(self, request: Request, broker: str) -> Response:
        return _run(ops.BrokerAlter, request, broker=broker)

    @doc.operation(ops.BrokerDelete, "brokers_delete", "brokers", 400, 404, 409, query=True)
    def delete(self, request: Request, broker: str) -> Response:
        return _run(ops.BrokerDelete, request, _query(request), broker=broker)


class QueueListView(APIView):
    @doc.operation(ops.QueueList, "queues_list", "queues", 400, 404, query=True)
    def get(self, request: Request, broker: str) -> Response:
        return _run(ops.QueueList, request, _query(request), broker=broker)

    @doc.operation(ops.QueueDefine, "queues_define", "queues", 400, 404, 409, 413, examples=doc.QUEUE_EXAMPLES)
    def post(self, request: Request, broker: str) -> Response:
        return _run(ops.QueueDefine, request, broker=broker)


class QueueDetailView(APIView):
    @doc.operation(ops.QueueDisplay, "queues_display", "queues", 404)
    def get(self, request: Request, broker: str, queue: str) -> Response:
        return _run(ops.QueueDisplay, request, {}, broker=broker, queue=queue)

    @doc.operation(ops.QueueAlter, "queues_alter", "queues", 400, 404, 409, 413, examples=doc.QUEUE_CHANGE_EXAMPLES)
    def patch(self, request: Request, broker: str, queue: str) -> Response:
        return _run(ops.QueueAlter, request, broker=broker, queue=queue)

    @doc.operation(ops.QueueDelete, "queues_delete", "queues", 400, 404, 409, query=True)
    def delete(self, request: Request, broker: str, queue: str) -> Response:
        return _run(ops.QueueDelete, request, _query(request), broker=broker, queue=queue)


# --- operations defined once (brokers.api.operations): messages, locks, transactions ------


class MessagesView(APIView):
    """GET browses, POST puts."""

    @doc.operation(
        ops.MessageBrowse,
        "messages_browse",
        "messages",
        400,
        404,
        query=True,
        summary="Browse: look at messages without removing them",
    )
    def get(self, request: Request, broker: str, queue: str) -> Response:
        return _run(ops.MessageBrowse, request, dict(request.query_params.items()), broker=broker, queue=queue)

    @doc.operation(
        ops.MessagePut,
        "messages_put",
        "messages",
        400,
        404,
        409,
        413,
        examples=doc.PUT_EXAMPLES,
        summary="Put one message, or a batch as messages",
    )
    def post(self, request: Request, broker: str, queue: str) -> Response:
        return _run(ops.MessagePut, request, broker=broker, queue=queue)


class GetView(APIView):
    @doc.operation(
        ops.MessageGet,
        "messages_get",
        "messages",
        400,
        404,
        409,
        413,
        examples=doc.GET_EXAMPLES,
        summary="Get messages (destructive, browse or peek-lock)",
    )
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
    @doc.operation(
        ops.LockDeadLetter, "locks_dead_letter", "locks", 400, 404, 409, 410, 413, examples=doc.DEAD_LETTER_EXAMPLES
    )
    def post(self, request: Request, token: str) -> Response:
        return _run(ops.LockDeadLetter, request, token=token)


class TransactionBeginView(APIView):
    @doc.operation(
        ops.TransactionBegin, "transactions_begin", "transactions", 400, 404, 413, examples=doc.BEGIN_EXAMPLES
    )
    def post(self, request: Request, broker: str) -> Response:
        return _run(ops.TransactionBegin, request, broker=broker)


class TransactionGraphView(APIView):
    """The broker's live transaction graph: open and recent transactions and their links."""

    @doc.transactions_graph
    def get(self, request: Request, broker: str) -> Response:
        may.require_transaction_graph(request.user, broker=broker)  # issue 16: who may see it, what is theirs
        return Response(may.transaction_graph_for(request.user, transaction_graph(broker=broker_get(name=broker).name)))


class TransactionDetailView(APIView):
    @doc.operation(ops.TransactionDisplay, "transactions_display", "transactions", 404)
    def get(self, request: Request, transaction_id: str) -> Response:
        return _run(ops.TransactionDisplay, request, {}, transaction_id=transaction_id)


class TransactionCommitView(APIView):
    @doc.operation(
        ops.TransactionCommit, "transactions_commit", "transactions", 400, 404, 409, 413, examples=doc.WAIT_EXAMPLES
    )
    def post(self, request: Request, transaction_id: str) -> Response:
        return _run(ops.TransactionCommit, request, transaction_id=transaction_id)


class TransactionRollbackView(APIView):
    @doc.operation(ops.TransactionRollback, "transactions_rollback", "transactions", 404, 409)
    def post(self, request: Request, transaction_id: str) -> Response:
        return _run(ops.TransactionRollback, request, transaction_id=transaction_id)


class TransactionCheckView(APIView):
    @doc.operation(
        ops.TransactionCheck,
        "transactions_check",
        "transactions",
        400,
        404,
        413,
        examples=doc.WAIT_EXAMPLES,
        summary="The ready-check",
    )
    def post(self, request: Request, transaction_id: str) -> Response:
        return _run(ops.TransactionCheck, request, transaction_id=transaction_id)


# --- connections --------------------------------------------------------------------------


class ConnectionOpenView(APIView):
    @doc.operation(
        ops.ConnectionOpen, "connections_open", "connections", 400, 404, 413, examples=doc.CONNECTION_EXAMPLES
    )
    def post(self, request: Request, broker: str) -> Response:
        return _run(ops.ConnectionOpen, request, broker=broker)


class ConnectionDetailView(APIView):
    @doc.operation(ops.ConnectionDisplay, "connections_display", "connections", 404)
    def get(self, request: Request, conn_id: str) -> Response:
        return _run(ops.ConnectionDisplay, request, {}, conn_id=conn_id)

    @doc.operation(
        ops.ConnectionClose,
        "connections_close",
        "connections",
        404,
        summary="Close: an open unit of work it began is rolled back",
    )
    def delete(self, request: Request, conn_id: str) -> Response:
        return _run(ops.ConnectionClose, request, {}, conn_id=conn_id)

"""Units of work: begin, display, commit, roll back, check; their one definition."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field

from transactions.manager import transaction_check, transaction_commit, transaction_rollback
from transactions.models import TransactionState
from transactions.selectors import transaction_get, transaction_graph, transaction_neighbours

from ... import permissions as may
from ...selectors import broker_get
from ...services.units_of_work import unit_of_work_begin
from .. import schema as doc
from ..render import transaction_render
from .base import Model, Operation, Wait

TransactionId = Annotated[str, Field(max_length=64, description="A unit of work's id.")]
States = Literal[tuple(TransactionState.values)]  # type: ignore[valid-type]


class TransactionOut(Model):
    id: str
    broker: str
    state: States
    reason: str | None
    cause: str | None = Field(description="The upstream whose rollback cascaded here.")
    upstream: list[str]
    downstream: list[str]
    created_at: str
    deadline_at: str | None
    commit_requested_at: str | None
    resolved_at: str | None


class TransactionBegin(Operation):
    """Begin a unit of work on a broker."""

    route = "brokers/<name:broker>/transactions/"
    url_name = "transaction-begin"
    operation_id = "transactions_begin"
    tag = "transactions"
    errors = (400, 404, 413)
    examples = doc.BEGIN_EXAMPLES

    session = "begin"
    path = ("broker",)
    success = 201

    class Input(Model):
        model_config = ConfigDict(extra="forbid", strict=True)
        broker: Annotated[str, Field(max_length=48)]
        timeout_ms: Annotated[int, Field(ge=1, le=86_400_000)] | None = Field(
            None, description="Rolled back if still open after this long; default: the broker's."
        )

    Output = TransactionOut

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        may.require_transaction_begin(user, broker=data.broker)
        txn = unit_of_work_begin(
            broker=data.broker, timeout_ms=data.timeout_ms, user_id=getattr(user, "pk", None)
        )  # its owner (docs/permissions.md)
        return 201, transaction_render(txn, upstream=[], downstream=[])  # new: no links yet


class GraphNode(Model):
    id: str
    broker: str
    state: States
    reason: str | None
    created_at: str
    resolved_at: str | None
    yours: bool = Field(
        description="Whether you may act on it: you began it, administer its broker, or are a superuser."
    )


class GraphEdge(Model):
    upstream: str
    downstream: str
    resource: str


class TransactionGraph(Operation):
    """The broker's live transaction graph"""

    route = "brokers/<name:broker>/transactions/graph/"
    url_name = "transaction-graph"
    method = "get"
    operation_id = "transactions_graph"
    tag = "transactions"
    errors = (404,)
    path = ("broker",)

    class Input(Model):
        broker: Annotated[str, Field(max_length=48)]

    class Output(Model):
        """Open and recent units of work of the broker, those linked to them, and their links."""

        broker: str
        nodes: list[GraphNode]
        edges: list[GraphEdge]

    @classmethod
    def permitted_first(cls, user, data: dict[str, Any]) -> None:
        may.require_transaction_graph(user, broker=data["broker"])  # who may see it, and what is theirs

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        may.require_transaction_graph(user, broker=data.broker)
        graph = transaction_graph(broker=broker_get(name=data.broker).name)
        return 200, may.transaction_graph_for(user, graph)


class TransactionDisplay(Operation):
    """A unit of work's state and links."""

    route = "transactions/<id:transaction_id>/"
    url_name = "transaction-detail"
    method = "get"
    operation_id = "transactions_display"
    tag = "transactions"
    errors = (404,)

    session = "transaction"
    path = ("transaction",)

    class Input(Model):
        transaction: TransactionId

    Output = TransactionOut

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        may.require_transaction(user, transaction_id=data.transaction)
        upstream, downstream = transaction_neighbours(transaction_id=data.transaction)
        return 200, transaction_render(
            transaction_get(transaction_id=data.transaction), upstream=upstream, downstream=downstream
        )


class TransactionCommit(Operation):
    """Commit; held (202) while an upstream is open, then it commits by itself."""

    route = "transactions/<id:transaction_id>/commit/"
    url_name = "transaction-commit"
    operation_id = "transactions_commit"
    tag = "transactions"
    errors = (400, 404, 409, 413)
    examples = doc.WAIT_EXAMPLES

    session = "commit"
    path = ("transaction",)

    class Input(Model):
        model_config = ConfigDict(extra="forbid", strict=True)
        transaction: TransactionId
        wait: Wait = 0

    class Committed(Model):
        id: str
        state: Literal["committed"]

    class CommitHeld(Model):
        id: str
        state: Literal["commit_held"]
        waiting_on: list[str] = Field(description="The open upstream units of work.")

    Output = {200: Committed, 202: CommitHeld}

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        may.require_transaction(user, transaction_id=data.transaction)
        outcome = transaction_commit(transaction_id=data.transaction, wait=data.wait)
        if outcome.state == "committed":
            return 200, {"id": data.transaction, "state": "committed"}
        return 202, {"id": data.transaction, "state": outcome.state, "waiting_on": outcome.waiting_on}


class TransactionRollback(Operation):
    """Roll back; every open unit of work downstream is backed out with it."""

    route = "transactions/<id:transaction_id>/rollback/"
    url_name = "transaction-rollback"
    operation_id = "transactions_rollback"
    tag = "transactions"
    errors = (404, 409)

    session = "rollback"
    path = ("transaction",)

    class Input(Model):
        transaction: TransactionId

    class Output(Model):
        id: str
        state: Literal["rolled_back"]
        reason: str | None
        cascaded: list[str] = Field(description="Downstream units of work backed out with it.")

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        may.require_transaction(user, transaction_id=data.transaction)
        outcome = transaction_rollback(transaction_id=data.transaction)
        return 200, {
            "id": data.transaction,
            "state": outcome.transaction.state,
            "reason": outcome.transaction.reason,
            "cascaded": outcome.cascaded,
        }


class TransactionCheck(Operation):
    """The ready-check: have all upstreams committed?"""

    route = "transactions/<id:transaction_id>/check/"
    url_name = "transaction-check"
    operation_id = "transactions_check"
    tag = "transactions"
    errors = (400, 404, 413)
    examples = doc.WAIT_EXAMPLES
    summary = "The ready-check"

    session = "check"
    path = ("transaction",)

    class Input(Model):
        model_config = ConfigDict(extra="forbid", strict=True)
        transaction: TransactionId
        wait: Wait = 0

    class Output(Model):
        id: str
        result: Literal["ready", "pending", "backed_out"]
        waiting_on: list[str]
        reason: str | None = None

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        may.require_transaction(user, transaction_id=data.transaction)
        outcome = transaction_check(transaction_id=data.transaction, wait=data.wait)
        body: dict[str, Any] = {"id": data.transaction, "result": outcome.result, "waiting_on": outcome.waiting_on}
        if outcome.reason:
            body["reason"] = outcome.reason
        return 200, body

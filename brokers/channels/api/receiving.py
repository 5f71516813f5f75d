"""The receiving end of a channel from another platform instance: take a batch, commit it,
back it out, tell its status (docs/design.md §6; brokers.channels.receiver does the work).

Each is a REST endpoint under ``/api/receiver/batches/`` and a session operation
(``batch_receive``, ``batch_commit``, ``batch_backout``, ``batch_status``): the sending
platform's agent keeps one session open and pipelines them (docs/channels.md, "Between
platform instances"). Delivering batches is for superusers."""

from __future__ import annotations

from typing import Annotated, Any, Callable, ClassVar, Literal

from pydantic import Field

from ... import permissions as may
from ...api.operations.base import Model, Operation
from ..receiver import (
    receiver_batch_backout,
    receiver_batch_commit,
    receiver_batch_receive,
    receiver_batch_status,
)

Short = Annotated[str, Field(max_length=48)]
Seq = Annotated[int, Field(ge=1, le=2**63 - 1, description="The batch's number.")]
States = Literal["received", "committed", "pending", "backed_out", "unknown"]


class BatchMessage(Model):
    """A message as it travels in a batch: its descriptor (msg_id kept), body, destination."""

    msg_id: Short
    correl_id: str | None = None
    group_id: str | None = None
    msg_type: str | None = None
    priority: int | None = None
    persistent: bool = True
    expires_at: str | None = None
    format: str | None = None
    reply_to_queue: str | None = None
    reply_to_broker: str | None = None
    report: list[str] | None = None
    properties: dict[str, Any] | None = None
    put_time: str
    put_application: str | None = None
    feedback: str | None = None
    body_base64: str
    destination: dict[str, Any] | None = Field(None, description='{"broker", "queue"}: where it goes.')


class BatchKey(Model):
    channel: Short
    source_broker: Short
    seq: Seq


class BatchStatus(Model):
    """What became of a batch. (``state``, not ``status``: a session's reply carries the
    HTTP status as ``status`` beside the body's fields.)"""

    state: States
    seq: int


class BatchReceive(Operation):
    """Take batch ``seq``: its messages are put under a unit of work held on a stand-in for
    the sender's (a batch already taken is not put again)."""

    route = "receiver/batches/"
    url_name = "receiver-batch"
    operation_id = "receiver_batch_receive"
    tag = "receiver"
    errors = (400, 404, 409, 413)

    session = "batch_receive"

    class Input(BatchKey):
        target_broker: Short
        provisional: bool = Field(False, description="Some message is still uncommitted upstream.")
        messages: list[BatchMessage]

    class Output(BatchStatus):
        dead_lettered: int | None = None
        duplicates: int | None = None

    @classmethod
    def permitted_first(cls, user, data: dict[str, Any]) -> None:
        """Superusers only, before the batch is validated: a stranger learns no field."""
        may.require_channel_operate(user)

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        may.require_channel_operate(user)
        return 200, receiver_batch_receive(payload=data.model_dump())


class _BatchAsk(Operation):
    """A call about one batch (superusers)."""

    Input = BatchKey
    Output: ClassVar[type[Model]] = BatchStatus
    service: ClassVar[Callable[..., dict[str, Any]]]

    @classmethod
    def permitted_first(cls, user, data: dict[str, Any]) -> None:
        may.require_channel_operate(user)

    @classmethod
    def perform(cls, user, data: BatchKey) -> tuple[int, dict[str, Any]]:
        may.require_channel_operate(user)
        return 200, cls.service(**data.model_dump())


class BatchCommit(_BatchAsk):
    """Commit batch ``seq`` (after every batch ahead of it), and with ``through`` every batch
    after it up to ``through``, in order, in one database transaction; stops at the first
    that cannot commit."""

    route = "receiver/batches/commit/"
    url_name = "receiver-commit"
    operation_id = "receiver_batch_commit"
    tag = "receiver"
    errors = (400, 409)

    session = "batch_commit"
    service = staticmethod(receiver_batch_commit)

    class Input(BatchKey):
        through: int | None = Field(None, ge=1, description="Commit the batches from seq through this one, in order.")

    class Output(BatchStatus):
        committed_through: int | None = Field(
            None, description="With through: the last batch committed by this call (none if seq could not commit)."
        )


class BatchBackout(_BatchAsk):
    """Back out batch ``seq``: the rollback cascades to whatever consumed its messages."""

    route = "receiver/batches/backout/"
    url_name = "receiver-backout"
    operation_id = "receiver_batch_backout"
    tag = "receiver"
    errors = (400,)

    session = "batch_backout"
    service = staticmethod(receiver_batch_backout)

    class Output(BatchStatus):
        cascaded: list[str] | None = None


class BatchInquire(_BatchAsk):
    """What became of batch ``seq``: committed, pending, backed_out or unknown."""

    route = "receiver/batches/status/"
    url_name = "receiver-status"
    operation_id = "receiver_batch_status"
    tag = "receiver"
    errors = (400,)

    session = "batch_status"
    service = staticmethod(receiver_batch_status)

"""Publishing: its one definition (``brokers.api.operations``), used by REST
(``POST /api/brokers/{broker}/publish/``), the session's ``publish`` and the schema."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import ConfigDict, Field

from brokers.api.operations import Model, Operation
from brokers.permissions import require_transaction
from brokers.services.message_input import MessageIn

from .. import permissions as may
from ..services.publications import publication_publish
from .definitions import TAG, PublishedTopic


class PublicationPublish(Operation):
    """Publish on a topic string: a copy on the queue of every active subscription whose
    filter matches (under a unit of work: its uncommitted puts); ``retain`` keeps it as the
    topic's retained publication."""

    session = "publish"
    route = "brokers/<name:broker>/publish/"
    url_name = "publish"
    operation_id = "publish"
    tag = TAG
    errors = (400, 404, 409, 413)
    path = ("broker",)
    success = 201

    class Input(MessageIn):
        model_config = ConfigDict(extra="forbid", strict=True)
        broker: Annotated[str, Field(max_length=48)]
        topic: PublishedTopic = Field(description="The topic string: levels separated by /.")
        retain: bool = False
        transaction: Annotated[str, Field(max_length=64)] | None = Field(
            None, description="Publish under this unit of work."
        )

    class Output(Model):
        msg_id: str
        topic: str
        matched: int = Field(description="Subscriptions a copy was put for.")
        retained: bool
        held: bool = Field(description="Held by conflation: delivered when the interval ends.")
        transaction: str | None

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        may.require_publish(user, broker=data.broker)
        if data.transaction:  # a unit of work is acted on only by its owner (docs/api.md, "Ownership")
            require_transaction(user, transaction_id=data.transaction)
        result = publication_publish(
            broker=data.broker,
            topic=data.topic,
            message=MessageIn.to_input(data),
            retain=data.retain,
            transaction_id=data.transaction or None,
        )
        return 201, {
            "msg_id": result.msg_id,
            "topic": result.topic,
            "matched": result.matched,
            "retained": result.retained,
            "held": result.held,
            "transaction": result.transaction_id,
        }

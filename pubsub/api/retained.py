"""Retained publications: list and clear; their one definition (``brokers.api.operations``)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import ConfigDict, Field

from brokers.api.operations import Model

from .. import permissions as may
from ..models import TOPIC_MAX
from ..selectors import retained_list
from ..services.retained import retained_clear
from .definitions import BrokerIn, PublishedTopic, PubSubOperation
from .render import retained_render


class RetainedOut(Model):
    topic: str
    msg_id: str
    published_at: str
    body: str | None = Field(description="The body as text (null when it is not UTF-8).")
    body_base64: str
    message: dict[str, Any] = Field(description="The other message fields of the publication.")


class RetainedList(PubSubOperation):
    """The retained publications whose topic a filter matches."""

    route = "brokers/<name:broker>/retained/"
    url_name = "retained"
    method = "get"
    query = True
    operation_id = "retained_list"
    errors = (400, 404)
    path = ("broker",)

    class Input(BrokerIn):
        model_config = ConfigDict(extra="forbid", strict=False)  # the query's text converts
        topic_filter: Annotated[str, Field(min_length=1, max_length=TOPIC_MAX, description="A topic filter.")] = "#"
        limit: Annotated[int, Field(ge=1, le=1000, description="Rows a page returns.")] = 1000
        offset: Annotated[int, Field(ge=0, description="Rows to skip.")] = 0

    class Output(Model):
        count: int
        results: list[RetainedOut]

    @classmethod
    def permitted_first(cls, user, data: dict[str, Any]) -> None:
        may.require_display(user, broker=data["broker"])

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        may.require_display(user, broker=data.broker)
        rows = retained_list(broker=data.broker, topic_filter=data.topic_filter)
        page = rows[data.offset : data.offset + data.limit]
        return 200, {"count": len(rows), "results": [retained_render(row) for row in page]}


class RetainedClear(PubSubOperation):
    """Clear a topic's retained publication (also when it has none)."""

    route = RetainedList.route
    method = "delete"
    query = True
    operation_id = "retained_clear"
    errors = (400, 404)
    path = ("broker",)
    success = 204

    class Input(BrokerIn):
        model_config = ConfigDict(extra="forbid", strict=False)  # the query's text converts
        topic: PublishedTopic = Field(description="The topic string.")

    class Output(Model):
        pass

    @classmethod
    def permitted_first(cls, user, data: dict[str, Any]) -> None:
        may.require_admin(user, broker=data["broker"])

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        may.require_admin(user, broker=data.broker)
        retained_clear(broker=data.broker, topic=data.topic)
        return 204, {}

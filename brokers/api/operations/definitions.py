"""Brokers and queues: list, define, display, alter, delete; their one definition.

These models are where a definition is validated (shapes, types, ranges, names, unknown
fields), for REST, the session, the ``baton`` commands and Python callers alike; the
services check only what depends on the database (names taken, a definition as a whole
once merged with the stored one, a queue's kind while it holds messages)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from django.conf import settings
from django.core.exceptions import ValidationError as DjangoValidationError
from pydantic import AfterValidator, ConfigDict, Field, model_validator

from ... import permissions as may
from ...models import (
    Access,
    DeliverySequence,
    EnforceOrder,
    Persistence,
    QueueKind,
    QueueUsage,
    ReadOrder,
    name_not_route,
)
from ...selectors import broker_get, broker_list, queue_depths, queue_get, queue_list
from ...services.brokers import broker_alter, broker_define, broker_delete
from ...services.queues import queue_alter, queue_define, queue_delete
from ...names import NAME_PATTERN, NAME_RULE
from .. import schema as doc
from ..render import broker_render, queue_render
from .base import Model, Operation, given

Name = Annotated[str, Field(pattern=NAME_PATTERN, max_length=48, description=NAME_RULE + ".")]


def _not_route(value: str) -> str:
    try:
        name_not_route(value)
    except DjangoValidationError as error:
        raise ValueError(error.messages[0]) from None
    return value


#: The name of a new broker or queue: a valid name whose '/'-separated parts are plain names.
ObjectName = Annotated[Name, AfterValidator(_not_route)]
PathName = Annotated[str, Field(max_length=200)]
Count = Annotated[int, Field(ge=0, le=2**31 - 1)]
Description = Annotated[str, Field(max_length=200)]
QueueRef = Annotated[str, Field(max_length=48)]


def _choices(choices) -> Any:
    return Literal[tuple(choices.values)]  # type: ignore[valid-type]


class Strict(Model):
    model_config = ConfigDict(extra="forbid", strict=True)


class Page(Model):
    """Query parameters of a list (text converts)."""

    limit: Annotated[int, Field(ge=1, le=1000, description="Rows a page returns.")] = settings.BATON_API_PAGE_SIZE
    offset: Annotated[int, Field(ge=0, le=10**9, description="Rows to skip.")] = 0


def _page(rows: list[dict[str, Any]], data: Page) -> dict[str, Any]:
    return {"count": len(rows), "results": rows[data.offset : data.offset + data.limit]}


# --- brokers --------------------------------------------------------------------------------


class BrokerOut(Model):
    name: str
    description: str
    dead_letter_queue: str
    transaction_timeout_ms: int
    max_message_length: int
    default_persistence: _choices(Persistence)
    auto_define_queues: bool
    created_at: str | None


class BrokerChanges(Strict):
    description: Description = None
    dead_letter_queue: Name = None
    transaction_timeout_ms: Count = Field(None, description="0: units of work never time out.")
    max_message_length: Count = None
    default_persistence: _choices(Persistence) = None
    auto_define_queues: bool = Field(
        None, description="STOMP: a SEND or SUBSCRIBE to a /queue/ that does not exist defines it with the defaults."
    )


class NoRename(Model):
    @model_validator(mode="before")
    @classmethod
    def _no_rename(cls, data: Any) -> Any:
        if isinstance(data, dict) and "name" in data:
            raise ValueError("name: Names cannot be changed; define a new object instead.")
        return data


class BrokerList(Operation):
    """The brokers the caller may see."""

    route = "brokers/"
    url_name = "broker-list"
    method = "get"
    query = True
    operation_id = "brokers_list"
    tag = "brokers"
    errors = (400,)

    class Input(Page):
        pass

    class Output(Model):
        count: int
        results: list[BrokerOut]

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        return 200, _page([broker_render(b) for b in may.brokers_visible(user, broker_list())], data)


class BrokerDefine(Operation):
    """Define a broker with its dead-letter queue (superusers)."""

    route = "brokers/"
    operation_id = "brokers_define"
    tag = "brokers"
    errors = (400, 409, 413)
    examples = doc.BROKER_EXAMPLES

    success = 201

    class Input(BrokerChanges):
        name: ObjectName

    Output = BrokerOut

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        may.require_broker_define(user)
        return 201, broker_render(broker_define(name=data.name, **given(data, "name")))


class BrokerDisplay(Operation):
    """A broker's definition."""

    route = "brokers/<name:broker>/"
    url_name = "broker-detail"
    method = "get"
    operation_id = "brokers_display"
    tag = "brokers"
    errors = (404,)

    path = ("broker",)

    class Input(Model):
        broker: PathName

    Output = BrokerOut

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        may.require_broker_display(user, broker=data.broker)
        return 200, broker_render(broker_get(name=data.broker))


class BrokerAlter(Operation):
    """Change a broker's attributes (names cannot change)."""

    route = "brokers/<name:broker>/"
    method = "patch"
    operation_id = "brokers_alter"
    tag = "brokers"
    errors = (400, 404, 413)
    examples = doc.BROKER_CHANGE_EXAMPLES

    path = ("broker",)

    class Input(BrokerChanges, NoRename):
        broker: PathName

    Output = BrokerOut

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        may.require_broker_admin(user, broker=data.broker)
        return 200, broker_render(broker_alter(name=data.broker, **given(data, "broker")))


class Purge(Model):
    purge: bool = Field(False, description="Delete even if it still holds messages (they are discarded).")


class BrokerDelete(Operation):
    """Delete a broker."""

    route = "brokers/<name:broker>/"
    method = "delete"
    query = True
    operation_id = "brokers_delete"
    tag = "brokers"
    errors = (400, 404, 409)

    path = ("broker",)
    success = 204

    class Input(Purge):
        broker: PathName

    class Output(Model):
        pass

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        may.require_broker_admin(user, broker=data.broker)
        broker_delete(name=data.broker, purge=data.purge)
        return 204, {}


# --- queues ---------------------------------------------------------------------------------


class QueueChanges(Strict):
    kind: _choices(QueueKind) = None
    usage: _choices(QueueUsage) = None
    description: Description = None
    max_depth: Count = None
    max_message_length: Count = None
    put_enabled: bool = None
    get_enabled: bool = None
    default_priority: Annotated[int, Field(ge=0, le=9)] = None
    default_persistence: _choices(Persistence) = None
    delivery_sequence: _choices(DeliverySequence) = None
    read_order: _choices(ReadOrder) = None
    enforce_order: _choices(EnforceOrder) = None
    backout_threshold: Count = None
    backout_queue: QueueRef = None
    lock_duration_ms: Annotated[int, Field(ge=1, le=2**31 - 1)] = None
    default_access: _choices(Access) = None
    remote_broker: QueueRef = None
    remote_queue: QueueRef = None
    transmission_queue: QueueRef = None
    target_queue: QueueRef = Field(None, description="For an alias.")
    depth_high_pct: Annotated[int, Field(ge=0, le=100)] = Field(
        None, description="Queue depth high event at this percent of max_depth; 0: off."
    )
    depth_low_pct: Annotated[int, Field(ge=0, le=100)] = Field(
        None, description="Queue depth low event when the depth falls to this percent of max_depth; 0: off."
    )
    service_interval_ms: Annotated[int, Field(ge=0, le=2**31 - 1)] = Field(
        None, description="Service interval high event once the oldest message is older than this; 0: off."
    )


class QueueOut(Model):
    name: str
    broker: str
    kind: _choices(QueueKind)
    usage: _choices(QueueUsage)
    description: str
    max_depth: int
    max_message_length: int
    put_enabled: bool
    get_enabled: bool
    default_priority: int
    default_persistence: _choices(Persistence)
    delivery_sequence: _choices(DeliverySequence)
    read_order: _choices(ReadOrder)
    enforce_order: _choices(EnforceOrder)
    backout_threshold: int
    backout_queue: str
    lock_duration_ms: int
    default_access: _choices(Access)
    remote_broker: str
    remote_queue: str
    transmission_queue: str
    target_queue: str
    depth_high_pct: int
    depth_low_pct: int
    service_interval_ms: int
    created_at: str | None
    depth: int = Field(description="Committed messages, available or in flight.")
    uncommitted_puts: int
    in_flight: int
    locked: int


def _queue_body(queue) -> dict[str, Any]:
    return queue_render(queue, queue_depths(queue_ids=[queue.pk])[queue.pk])


class QueueList(Operation):
    """The broker's queues the caller may see."""

    route = "brokers/<name:broker>/queues/"
    url_name = "queue-list"
    method = "get"
    query = True
    operation_id = "queues_list"
    tag = "queues"
    errors = (400, 404)

    path = ("broker",)

    class Input(Page):
        broker: PathName

    class Output(Model):
        count: int
        results: list[QueueOut]

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        may.require_broker_display(user, broker=data.broker)
        queues = may.queues_visible(user, broker=data.broker, queues=queue_list(broker=data.broker))
        depths = queue_depths(queue_ids=[q.pk for q in queues])
        return 200, _page([queue_render(q, depths[q.pk]) for q in queues], data)


class QueueDefine(Operation):
    """Define a queue: local, remote, alias or model; normal or transmission."""

    route = "brokers/<name:broker>/queues/"
    operation_id = "queues_define"
    tag = "queues"
    errors = (400, 404, 409, 413)
    examples = doc.QUEUE_EXAMPLES

    path = ("broker",)
    success = 201

    class Input(QueueChanges):
        broker: PathName
        name: ObjectName

    Output = QueueOut

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        may.require_broker_admin(user, broker=data.broker)
        queue = queue_define(broker=data.broker, name=data.name, user=user, **given(data, "broker", "name"))
        return 201, _queue_body(queue)


class QueueDisplay(Operation):
    """A queue's definition and depths."""

    route = "brokers/<name:broker>/queues/<name:queue>/"
    url_name = "queue-detail"
    method = "get"
    operation_id = "queues_display"
    tag = "queues"
    errors = (404,)

    path = ("broker", "queue")

    class Input(Model):
        broker: PathName
        queue: PathName

    Output = QueueOut

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        may.require_queue_display(user, broker=data.broker, queue=data.queue)
        return 200, _queue_body(queue_get(broker=data.broker, name=data.queue))


class QueueAlter(Operation):
    """Change a queue's attributes (names cannot change)."""

    route = "brokers/<name:broker>/queues/<name:queue>/"
    method = "patch"
    operation_id = "queues_alter"
    tag = "queues"
    errors = (400, 404, 409, 413)
    examples = doc.QUEUE_CHANGE_EXAMPLES

    path = ("broker", "queue")

    class Input(QueueChanges, NoRename):
        broker: PathName
        queue: PathName

    Output = QueueOut

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        may.require_queue_admin(user, broker=data.broker, queue=data.queue)
        return 200, _queue_body(
            queue_alter(broker=data.broker, name=data.queue, user=user, **given(data, "broker", "queue"))
        )


class QueueDelete(Operation):
    """Delete a queue."""

    route = "brokers/<name:broker>/queues/<name:queue>/"
    method = "delete"
    query = True
    operation_id = "queues_delete"
    tag = "queues"
    errors = (400, 404, 409)

    path = ("broker", "queue")
    success = 204

    class Input(Purge):
        broker: PathName
        queue: PathName

    class Output(Model):
        pass

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        may.require_queue_admin(user, broker=data.broker, queue=data.queue)
        queue_delete(broker=data.broker, name=data.queue, purge=data.purge)
        return 204, {}

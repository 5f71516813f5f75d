"""Topic objects and subscriptions: list, define, display, alter, delete; their one
definition (``brokers.api.operations``) for REST and the schema.

These models are where a definition is validated (shapes, types, names, the topic grammar:
a topic string's levels, a filter's wildcards), for REST and the ``baton`` commands alike;
the services check only what depends on the database (the broker and queue exist, a name or
topic string is free, the topic object allows durable subscriptions)."""

from __future__ import annotations

from typing import Annotated, Any

from drf_spectacular.utils import OpenApiExample, OpenApiParameter
from pydantic import ConfigDict, Field, model_validator

from brokers.api.operations import Model, Operation
from brokers.api.operations.base import given, problems_refused
from brokers.api.schema import PATH_NAME
from brokers.names import NAME as NAME_RE
from brokers.names import NAME_MESSAGE

from .. import permissions as may
from ..models import TOPIC_MAX
from ..topics import filter_problems, has_wildcards, topic_problems
from ..selectors import subscription_get, subscription_list, topic_get, topic_list
from ..services.subscriptions import subscription_define, subscription_delete
from ..services.topics import topic_alter, topic_define, topic_delete
from .render import subscription_render, topic_render

TAG = "publish/subscribe"
#: A topic object's or subscription's name in the path.
NAME = OpenApiParameter(
    "name",
    str,
    OpenApiParameter.PATH,
    required=True,
    pattern=PATH_NAME,
    description="Topic object or subscription name.",
    examples=[OpenApiExample("name", value="T1")],
)

ObjectName = Annotated[str, Field(min_length=1, max_length=48)]
TopicText = Annotated[str, Field(min_length=1, max_length=TOPIC_MAX)]
_NAME = NAME_RE


def _name_problems(value: str) -> list[str]:
    return [] if _NAME.match(value) else [NAME_MESSAGE]


def _switch_problems(value: str | None) -> list[str]:
    """An activation or deactivation topic: none, or a topic string without wildcards."""
    if not value:
        return []
    if has_wildcards(value):
        return ["Must be a topic string, without the wildcards + or #."]
    return topic_problems(value)


#: The name of a new topic object or subscription.
NewName = Annotated[ObjectName, problems_refused(_name_problems)]
TopicString = Annotated[TopicText, problems_refused(topic_problems)]
TopicFilter = Annotated[TopicText, problems_refused(filter_problems)]
#: A topic string one may publish to (no wildcards), as ``publish`` and ``retained`` take it.
PublishedTopic = Annotated[str, Field(max_length=TOPIC_MAX), problems_refused(topic_problems)]
SwitchTopic = Annotated[Annotated[str, Field(max_length=TOPIC_MAX)] | None, problems_refused(_switch_problems)]
Conflation = Annotated[
    int,
    Field(
        ge=0,
        le=86_400_000,
        description="Publications within this many ms of the last delivery are held; the latest is "
        "delivered when the interval ends (0: no conflation).",
    ),
]
Description = Annotated[str, Field(max_length=200)]


class PubSubOperation(Operation):
    """What every topic and subscription operation shares: its tag and the name in its path."""

    tag = TAG
    path_parameters = {"name": NAME}


class BrokerIn(Model):
    """A body's types are JSON's own: ``0`` is no boolean, ``"5"`` no number (strict)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    broker: Annotated[str, Field(max_length=48)]


class NamedIn(BrokerIn):
    name: ObjectName


# --- topic objects --------------------------------------------------------------------------


class TopicOut(Model):
    name: str
    broker: str
    topic_string: str
    conflation_interval_ms: int
    durable_subscriptions: bool
    description: str
    created_at: str
    altered_at: str


class TopicList(PubSubOperation):
    """The broker's topic objects."""

    route = "brokers/<name:broker>/topics/"
    url_name = "topic-list"
    method = "get"
    operation_id = "topics_list"
    errors = (404,)
    path = ("broker",)
    Input = BrokerIn

    class Output(Model):
        count: int
        results: list[TopicOut]

    @classmethod
    def permitted_first(cls, user, data: dict[str, Any]) -> None:
        may.require_display(user, broker=data["broker"])

    @classmethod
    def perform(cls, user, data: BrokerIn) -> tuple[int, dict[str, Any]]:
        may.require_display(user, broker=data.broker)
        rows = [topic_render(t) for t in topic_list(broker=data.broker)]
        return 200, {"count": len(rows), "results": rows}


class TopicDefine(PubSubOperation):
    """Define a topic object: it administers its topic string and every string below it."""

    route = TopicList.route
    operation_id = "topics_define"
    errors = (400, 404, 409)
    path = ("broker",)
    success = 201

    class Input(BrokerIn):
        name: NewName
        topic_string: TopicString = Field(description="The topic string it administers (no wildcards).")
        conflation_interval_ms: Conflation = 0
        durable_subscriptions: bool = Field(True, description="Whether durable subscriptions are allowed.")
        description: Description = ""

    Output = TopicOut

    @classmethod
    def permitted_first(cls, user, data: dict[str, Any]) -> None:
        may.require_admin(user, broker=data["broker"])

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        may.require_admin(user, broker=data.broker)
        topic = topic_define(**given(data))
        return 201, topic_render(topic)


class TopicDisplay(PubSubOperation):
    """One topic object."""

    route = "brokers/<name:broker>/topics/<name:name>/"
    url_name = "topic-detail"
    method = "get"
    operation_id = "topics_display"
    errors = (404,)
    path = ("broker", "name")
    Input = NamedIn
    Output = TopicOut

    @classmethod
    def permitted_first(cls, user, data: dict[str, Any]) -> None:
        may.require_display(user, broker=data["broker"])

    @classmethod
    def perform(cls, user, data: NamedIn) -> tuple[int, dict[str, Any]]:
        may.require_display(user, broker=data.broker)
        return 200, topic_render(topic_get(broker=data.broker, name=data.name))


class TopicAlter(PubSubOperation):
    """Alter a topic object: the fields given change (its topic string cannot)."""

    route = TopicDisplay.route
    method = "patch"
    operation_id = "topics_alter"
    errors = (400, 404)
    path = ("broker", "name")

    class Input(NamedIn):
        conflation_interval_ms: Conflation = None
        durable_subscriptions: bool = None
        description: Description = None

    Output = TopicOut

    @classmethod
    def permitted_first(cls, user, data: dict[str, Any]) -> None:
        may.require_admin(user, broker=data["broker"])

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        may.require_admin(user, broker=data.broker)
        return 200, topic_render(topic_alter(broker=data.broker, name=data.name, **given(data, "broker", "name")))


class TopicDelete(PubSubOperation):
    """Delete a topic object."""

    route = TopicDisplay.route
    method = "delete"
    operation_id = "topics_delete"
    errors = (404,)
    path = ("broker", "name")
    success = 204
    Input = NamedIn

    class Output(Model):
        pass

    @classmethod
    def permitted_first(cls, user, data: dict[str, Any]) -> None:
        may.require_admin(user, broker=data["broker"])

    @classmethod
    def perform(cls, user, data: NamedIn) -> tuple[int, dict[str, Any]]:
        may.require_admin(user, broker=data.broker)
        topic_delete(broker=data.broker, name=data.name)
        return 204, {}


# --- subscriptions --------------------------------------------------------------------------


class SubscriptionOut(Model):
    name: str
    broker: str
    topic_filter: str
    queue: str
    durable: bool
    activation_topic: str | None
    deactivation_topic: str | None
    new_publications_only: bool
    active: bool
    created_at: str


class SubscriptionList(PubSubOperation):
    """The broker's subscriptions."""

    route = "brokers/<name:broker>/subscriptions/"
    url_name = "subscription-list"
    method = "get"
    operation_id = "subscriptions_list"
    errors = (404,)
    path = ("broker",)
    Input = BrokerIn

    class Output(Model):
        count: int
        results: list[SubscriptionOut]

    @classmethod
    def permitted_first(cls, user, data: dict[str, Any]) -> None:
        may.require_display(user, broker=data["broker"])

    @classmethod
    def perform(cls, user, data: BrokerIn) -> tuple[int, dict[str, Any]]:
        may.require_display(user, broker=data.broker)
        rows = [subscription_render(s) for s in subscription_list(broker=data.broker)]
        return 200, {"count": len(rows), "results": rows}


class SubscriptionDefine(PubSubOperation):
    """Define a subscription: publications whose topic its filter matches are put on its queue."""

    route = SubscriptionList.route
    operation_id = "subscriptions_define"
    errors = (400, 404, 409)
    path = ("broker",)
    success = 201

    class Input(BrokerIn):
        name: NewName
        topic_filter: TopicFilter = Field(description="A topic filter: + matches one level, # the rest.")
        queue: Annotated[
            ObjectName, problems_refused(lambda value: [] if _NAME.match(value) else ["Name a queue of the broker."])
        ] = Field(description="The broker's queue the copies are put on.")
        durable: bool = Field(True, description="Survives a platform restart; a full queue fails a publication.")
        activation_topic: SwitchTopic = Field(
            "", description="A publication on this topic string activates it (none: active from the start)."
        )
        deactivation_topic: SwitchTopic = Field("", description="A publication on this topic string deactivates it.")
        new_publications_only: bool = Field(False, description="Do not send it the retained publications.")

        @model_validator(mode="after")
        def _switches_differ(self):
            if self.activation_topic and self.activation_topic == self.deactivation_topic:
                raise ValueError("deactivation_topic: Must differ from the activation topic.")
            return self

    Output = SubscriptionOut

    @classmethod
    def permitted_first(cls, user, data: dict[str, Any]) -> None:
        may.require_admin(user, broker=data["broker"])

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        may.require_admin(user, broker=data.broker)
        fields = data.model_dump()
        for name in ("activation_topic", "deactivation_topic"):
            fields[name] = fields[name] or ""  # null and "" both mean none
        subscription = subscription_define(**fields, user=user)
        return 201, subscription_render(subscription_get(broker=data.broker, name=subscription.name))


class SubscriptionDisplay(PubSubOperation):
    """One subscription."""

    route = "brokers/<name:broker>/subscriptions/<name:name>/"
    url_name = "subscription-detail"
    method = "get"
    operation_id = "subscriptions_display"
    errors = (404,)
    path = ("broker", "name")
    Input = NamedIn
    Output = SubscriptionOut

    @classmethod
    def permitted_first(cls, user, data: dict[str, Any]) -> None:
        may.require_display(user, broker=data["broker"])

    @classmethod
    def perform(cls, user, data: NamedIn) -> tuple[int, dict[str, Any]]:
        may.require_display(user, broker=data.broker)
        return 200, subscription_render(subscription_get(broker=data.broker, name=data.name))


class SubscriptionDelete(PubSubOperation):
    """Delete a subscription (the copies already on its queue stay)."""

    route = SubscriptionDisplay.route
    method = "delete"
    operation_id = "subscriptions_delete"
    errors = (404,)
    path = ("broker", "name")
    success = 204
    Input = NamedIn

    class Output(Model):
        pass

    @classmethod
    def permitted_first(cls, user, data: dict[str, Any]) -> None:
        may.require_admin(user, broker=data["broker"])

    @classmethod
    def perform(cls, user, data: NamedIn) -> tuple[int, dict[str, Any]]:
        may.require_admin(user, broker=data.broker)
        subscription_delete(broker=data.broker, name=data.name)
        return 204, {}

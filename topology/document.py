"""The definitions document, ``baton-definitions/1``: one pydantic model per kind of object,
each made from the input its define operation already validates (so a new attribute there is
an attribute here), and the document that lists them. These models validate a document (REST,
the command line, the console alike) and generate its JSON Schema (``/api/definitions/schema/``).

Each kind is described once in :data:`KINDS`: its list in the document, the fields naming the
object (the rest are its attributes) and the order in which it is created."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, model_validator

from brokers.api.operations.base import Model
from brokers.api.operations.definitions import BrokerChanges, Name, ObjectName, QueueChanges, Strict
from brokers.channels.api.operations import ChannelChanges
from brokers.models import Grant
from brokers.names import NAME_CHARACTERS
from pubsub.api.definitions import SubscriptionDefine, TopicDefine
from workflows.api.operations import WorkflowDefine

FORMAT = "baton-definitions/1"

#: An environment variable's name.
EnvName = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,127}$", description="An environment variable.")]
#: A user's name, as Django's user model takes it.
Username = Annotated[str, Field(min_length=1, max_length=150, pattern=r"^[\w.@+-]+$")]
#: A grant's queue: a name, or empty for the whole broker.
GRANT_QUEUE_PATTERN = rf"^([{NAME_CHARACTERS}]{{1,48}})?$"


class EnvRef(Strict):
    """A secret kept out of the document: the value of this environment variable where the
    document is applied."""

    env: EnvName


class BrokerDef(BrokerChanges):
    name: ObjectName


class QueueDef(QueueChanges):
    broker: Name
    name: ObjectName


class ChannelDef(ChannelChanges):
    name: Name
    source_broker: Name
    transmission_queue: Name
    target_broker: Name
    target_token: EnvRef | None = Field(None, description="Read from this environment variable when applied.")


class TopicDef(TopicDefine.Input):
    broker: Name


class SubscriptionDef(SubscriptionDefine.Input):
    broker: Name


class WorkflowDef(WorkflowDefine.Input):
    broker: Name


class UserDef(Strict):
    """A user, without a password (it signs in with its API token, or is given one with
    ``manage.py baton user``)."""

    username: Username
    superuser: bool = False
    active: bool = True


class GrantDef(Strict):
    user: Username
    broker: Name
    queue: Annotated[str, Field(pattern=GRANT_QUEUE_PATTERN, description="Empty: the whole broker.")] = ""
    actions: Annotated[
        list[Literal[tuple(Grant.ACTIONS)]],  # type: ignore[valid-type]
        Field(min_length=1, description="What the user may do there."),
    ]


@dataclass(frozen=True)
class Kind:
    """One kind of object in the document."""

    #: its name in plans (``queue``) and its list in the document (``queues``)
    name: str
    plural: str
    model: type[Model]
    #: the fields naming one object; the model's other fields are its attributes
    identity: tuple[str, ...]
    #: the field that names its broker (None: it belongs to no broker)
    broker_field: str | None

    @property
    def attributes(self) -> list[str]:
        return [f for f in self.model.model_fields if f not in self.identity]

    def key(self, values: dict[str, Any]) -> tuple[str, str]:
        """(broker, name) of an object: how plans name it."""
        broker = values.get(self.broker_field, "") if self.broker_field else ""
        if self.name == "grant":
            return broker, f"{values['user']}@{values.get('queue') or '*'}"
        return broker, values[self.identity[-1]]


#: Every kind, in the order objects are created (deletions go the other way).
KINDS: list[Kind] = [
    Kind("broker", "brokers", BrokerDef, ("name",), "name"),
    Kind("queue", "queues", QueueDef, ("broker", "name"), "broker"),
    Kind("channel", "channels", ChannelDef, ("name",), "source_broker"),
    Kind("topic", "topics", TopicDef, ("broker", "name"), "broker"),
    Kind("subscription", "subscriptions", SubscriptionDef, ("broker", "name"), "broker"),
    Kind("workflow", "workflows", WorkflowDef, ("broker", "name"), "broker"),
    Kind("user", "users", UserDef, ("username",), None),
    Kind("grant", "grants", GrantDef, ("user", "broker", "queue"), "broker"),
]
KIND = {k.name: k for k in KINDS}


class Document(Model):
    """Everything an administrator defines (docs/definitions.md). JSON's own types:
    ``0`` is no boolean (strict)."""

    model_config = ConfigDict(extra="forbid", strict=True)
    format: Literal[FORMAT] = Field(description=f"Always {FORMAT!r}.")  # type: ignore[valid-type]
    broker: Name | None = Field(
        None, description="The one broker the document covers (an export with broker=): prune leaves the others."
    )
    brokers: list[BrokerDef] = []
    queues: list[QueueDef] = []
    channels: list[ChannelDef] = []
    topics: list[TopicDef] = []
    subscriptions: list[SubscriptionDef] = []
    workflows: list[WorkflowDef] = []
    users: list[UserDef] = []
    grants: list[GrantDef] = []

    @model_validator(mode="after")
    def _each_once(self):
        for kind in KINDS:
            seen: set = set()
            for i, item in enumerate(getattr(self, kind.plural)):
                key = tuple(getattr(item, f) for f in kind.identity)
                if key in seen:
                    raise ValueError(f"{kind.plural}[{i}]: {kind.name.capitalize()} {'/'.join(key)} is defined twice.")
                seen.add(key)
        return self


def document_schema() -> dict[str, Any]:
    """The document's JSON Schema, made from the models that validate it."""
    schema = Document.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = FORMAT
    return schema

"""The platform's definitions in document form (``baton-definitions/1``): every object with
every attribute (:func:`definitions_state`), and the document an export writes
(:func:`definitions_export`): sorted, only what differs from the defaults unless ``all``.

Attributes are read generically: an attribute of a kind's document model (``document.KINDS``)
is the model field of that name (a related object: its name); only workflows (their current
version), users and grants are read by hand. A default is the document model's own, else the
database model's; a queue's also follow its broker (what ``queue_define`` and
``broker_define`` give an attribute left out)."""

from __future__ import annotations

import re
from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import FieldDoesNotExist
from django.db import models

from brokers.models import Broker, Channel, Grant, Queue, QueueKind
from brokers.selectors import broker_get
from pubsub.models import Subscription, Topic
from workflows.models import Workflow, WorkflowStep, WorkflowVersion

from .document import FORMAT, KINDS, Kind

#: The database model of each kind read generically.
ROWS: dict[str, type[models.Model]] = {
    "broker": Broker,
    "queue": Queue,
    "channel": Channel,
    "topic": Topic,
    "subscription": Subscription,
}
#: What ``broker_define`` gives the dead-letter queue it defines (and the model's own
#: maximum message length, not the broker's).
DEAD_LETTER_DEFAULTS = {"description": "Dead-letter queue", "max_depth": 999_999_999}


def token_env(channel: str) -> str:
    """The environment variable an exported channel's ``target_token`` is read from."""
    return "BATON_CHANNEL_TOKEN_" + re.sub(r"[^A-Za-z0-9]", "_", channel).upper()


def _value(row: models.Model, attribute: str) -> Any:
    value = getattr(row, attribute)
    return value.name if isinstance(value, models.Model) else value


def _model_default(kind: Kind, attribute: str) -> Any:
    model = ROWS.get(kind.name)
    try:
        field = model._meta.get_field(attribute) if model else None
    except FieldDoesNotExist:
        return None
    return field.get_default() if field is not None else None


def attribute_defaults(kind: Kind, values: dict[str, Any], brokers: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The value each optional attribute of an object takes when left out, as the define
    services give it (``values``: the object's fields; ``brokers``: name -> its broker's)."""
    defaults: dict[str, Any] = {}
    for attribute in kind.attributes:
        info = kind.model.model_fields[attribute]
        if info.is_required():
            continue
        defaults[attribute] = info.default if info.default is not None else _model_default(kind, attribute)
    if kind.name == "channel":
        defaults["target_token"] = None
    if kind.name == "queue":
        broker = brokers.get(values["broker"])
        if broker is not None:
            defaults["max_message_length"] = broker["max_message_length"]
            defaults["default_persistence"] = broker["default_persistence"]
            if values["name"] == broker["dead_letter_queue"]:
                defaults.update(DEAD_LETTER_DEFAULTS, max_message_length=_model_default(kind, "max_message_length"))
        if values.get("kind") == QueueKind.REMOTE:
            defaults["remote_queue"] = values["name"]
            defaults["transmission_queue"] = values.get("remote_broker", "")
    return defaults


def _ordered(kind: Kind, values: dict[str, Any]) -> dict[str, Any]:
    """The naming fields first, then the attributes by name; no None (None: left out)."""
    names = [f for f in kind.identity if f in values] + sorted(f for f in values if f not in kind.identity)
    return {f: values[f] for f in names if values[f] is not None}


def _generic(kind: Kind, rows) -> list[dict[str, Any]]:
    fields = [*kind.identity, *kind.attributes]
    return [{f: _value(row, f) for f in fields} for row in rows]


def _channels(rows) -> list[dict[str, Any]]:
    found = _generic(KINDS[2], rows)
    for values in found:
        values["target_token"] = {"env": token_env(values["name"])} if values["target_token"] else None
    return found


def _workflows(rows) -> list[dict[str, Any]]:
    versions = {
        (v.workflow_id, v.version): v
        for v in WorkflowVersion.objects.filter(workflow__in=rows).prefetch_related(
            models.Prefetch("steps", queryset=WorkflowStep.objects.order_by("position"))
        )
    }
    found = []
    for workflow in rows:
        version = versions[(workflow.pk, workflow.version)]
        found.append(
            {
                "broker": workflow.broker.name,
                "name": workflow.name,
                "description": version.description,
                "deadline_ms": version.deadline_ms,
                "steps": [step_form(s.name, s.queue, s.compensation_queue, s.next) for s in version.steps.all()],
            }
        )
    return found


def step_form(name: str, queue: str, compensation_queue: str, next_steps: list[str] | None) -> dict[str, Any]:
    """A workflow step as the document writes it (``next`` only where it was given)."""
    step: dict[str, Any] = {"name": name, "queue": queue, "compensation_queue": compensation_queue}
    if next_steps is not None:
        step["next"] = list(next_steps)
    return step


def definitions_state(*, broker: str | None = None) -> dict[str, list[dict[str, Any]]]:
    """Every object (those of ``broker`` only, when given) with every attribute, in document
    form, each list sorted by the objects' names."""
    on = {} if broker is None else {"broker__name": broker}
    grants = Grant.objects.select_related("user").filter(**({} if broker is None else {"broker": broker}))
    users = get_user_model().objects.all()
    if broker is not None:
        users = users.filter(pk__in=grants.values("user_id"))
    state = {
        "brokers": _generic(KINDS[0], Broker.objects.filter(**({} if broker is None else {"name": broker}))),
        "queues": _generic(KINDS[1], Queue.objects.select_related("broker").filter(**on)),
        "channels": _channels(
            Channel.objects.select_related("source_broker").filter(
                **({} if broker is None else {"source_broker__name": broker})
            )
        ),
        "topics": _generic(KINDS[3], Topic.objects.select_related("broker").filter(**on)),
        "subscriptions": _generic(KINDS[4], Subscription.objects.select_related("broker", "queue").filter(**on)),
        "workflows": _workflows(list(Workflow.objects.select_related("broker").filter(**on))),
        "users": [{"username": u.username, "superuser": u.is_superuser, "active": u.is_active} for u in users],
        "grants": [
            {"user": g.user.username, "broker": g.broker, "queue": g.queue, "actions": g.actions}
            for g in grants
            if g.actions
        ],
    }
    for kind in KINDS:
        for values in state[kind.plural]:
            if kind.name == "subscription":
                for switch in ("activation_topic", "deactivation_topic"):
                    values[switch] = values[switch] or ""
        state[kind.plural].sort(key=lambda v, k=kind: tuple(v[f] for f in k.identity))
    return state


def definitions_export(*, broker: str | None = None, all: bool = False) -> dict[str, Any]:  # noqa: A002
    """The document of the platform's definitions (of ``broker`` only, when given): every
    object, with the attributes that differ from their defaults (``all``: every attribute),
    sorted; the same definitions give the same document. Secrets are never written: a
    channel's ``target_token`` is an ``{"env": NAME}`` reference."""
    if broker is not None:
        broker_get(name=broker)  # 404 for a broker that does not exist
    state = definitions_state(broker=broker)
    brokers = {b["name"]: b for b in state["brokers"]}
    document: dict[str, Any] = {"format": FORMAT}
    if broker is not None:
        document["broker"] = broker
    for kind in KINDS:
        rows = []
        for values in state[kind.plural]:
            defaults = {} if all else attribute_defaults(kind, values, brokers)
            rows.append(_ordered(kind, {f: v for f, v in values.items() if f not in defaults or defaults[f] != v}))
        document[kind.plural] = rows
    return document

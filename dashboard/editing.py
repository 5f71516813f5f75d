"""Defining, altering and deleting from the console: the objects it edits, and their forms.

Each kind of object names the REST operations that define, alter, display and delete it
(``brokers.api.operations`` and the channels', pub/sub's and workflows' operations). A
form's fields are made from the operation's input (one definition: a new attribute of a
queue shows up in its form without touching this module): Django's form checks what the
browser sent has the right shape (a whole number, a choice, JSON); the operation then
validates it as REST does, checks the user's permission and calls its one service, whose
errors (a name taken, a queue that still holds messages, ...) the form shows beside the
field they name. Nothing is half-made: each operation is one database transaction.
"""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass, field
from typing import Any, Callable, Literal

from annotated_types import Ge, Le, MaxLen
from django import forms
from django.urls import reverse

from brokers import permissions
from brokers.api import operations as ops
from brokers.api.operations.base import Operation
from brokers.channels.api import operations as channel_ops
from pubsub.api import definitions as pubsub_ops
from workflows.api import operations as workflow_ops

#: Fields whose current value is never shown and which change only when something is typed.
SECRETS = frozenset({"target_token"})
_YES_NO = [("", "—"), ("true", "yes"), ("false", "no")]


def _unwrapped(annotation: Any) -> Any:
    """``X | None`` as ``X``."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        kept = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(kept) == 1:
            return kept[0]
    return annotation


def _bound(info, kind: type) -> Any:
    for item in info.metadata:
        if isinstance(item, kind):
            return getattr(item, {Ge: "ge", Le: "le", MaxLen: "max_length"}[kind])
    return None


def shown(value: Any) -> Any:
    """An object's current value as its alter form shows it (yes/no fields take text)."""
    return {True: "true", False: "false"}.get(value, value) if isinstance(value, bool) else value


def _yes_no(value: str) -> bool | None:
    return {"true": True, "false": False}.get(value)


def form_field(name: str, info, *, required: bool) -> forms.Field:
    """The form field for one field of an operation's input: its shape only (the
    operation checks the rest)."""
    annotation = _unwrapped(info.annotation)
    label = name.replace("_", " ")
    common = {"label": label, "required": required, "help_text": info.description or ""}
    if typing.get_origin(annotation) is Literal:
        choices = [(v, str(v).replace("_", " ")) for v in typing.get_args(annotation)]
        return forms.ChoiceField(choices=([] if required else [("", "—")]) + choices, **common)
    if annotation is bool:
        return forms.TypedChoiceField(choices=_YES_NO, coerce=_yes_no, empty_value=None, **common)
    if annotation is int:
        return forms.IntegerField(min_value=_bound(info, Ge), max_value=_bound(info, Le), **common)
    if annotation is str:
        widget = forms.PasswordInput(render_value=False) if name in SECRETS else None
        return forms.CharField(max_length=_bound(info, MaxLen), strip=False, widget=widget, **common)
    return forms.JSONField(widget=forms.Textarea(attrs={"rows": 6}), **common)  # lists and objects


def form_class(
    operation: type[Operation], *, skip: tuple[str, ...] = (), first: tuple[str, ...] = ()
) -> type[forms.Form]:
    """A Django form with the fields of ``operation``'s input that are not in its path: the
    required ones first, then those named in ``first``, then the rest in the input's order."""
    given = [
        (name, info)
        for name, info in operation.Input.model_fields.items()
        if name not in operation.path and name not in skip
    ]
    order = {name: i for i, name in enumerate(first)}
    given.sort(key=lambda item: (not item[1].is_required(), order.get(item[0], len(order))))
    fields = {name: form_field(name, info, required=info.is_required()) for name, info in given}
    return type(f"{operation.__name__}Form", (forms.Form,), fields)


def defined(form: forms.Form) -> dict[str, Any]:
    """What a define form asks for: the fields given (blank: the operation's default)."""
    return {name: value for name, value in form.cleaned_data.items() if value not in (None, "")}


def altered(form: forms.Form) -> dict[str, Any]:
    """What an alter form changes: the fields that differ from the object's values (a
    secret only when one is typed)."""
    out = {}
    for name in form.changed_data:
        value = form.cleaned_data.get(name)
        if value is None or (name in SECRETS and value == ""):
            continue
        out[name] = value
    return out


def errors_shown(form: forms.Form, error) -> None:
    """A refusal in the form: each field's reasons beside it, the message above."""
    shown = False
    for name, reasons in (getattr(error, "errors", None) or {}).items():
        field_name = name.partition(".")[0].partition("[")[0]
        if field_name in form.fields:
            for reason in reasons:
                form.add_error(field_name, reason)
            shown = True
    if not shown or error.message not in " ".join(str(e) for e in form.errors.get("__all__", [])):
        form.add_error(None, error.message)


def _allowed(check: Callable[..., None], *args, **kwargs) -> bool:
    from baton_client.errors import PermissionDenied

    try:
        check(*args, **kwargs)
    except PermissionDenied:
        return False
    return True


@dataclass(frozen=True)
class Kind:
    """One kind of object the console defines, alters and deletes."""

    key: str
    label: str
    define: type[Operation] | None
    alter: type[Operation] | None
    delete: type[Operation] | None
    display: type[Operation]
    #: who may define one (path -> raises PermissionDenied); who may alter or delete one
    may_define: Callable[..., None]
    may_change: Callable[..., None]
    #: the page to go to after defining or altering (path of the object), after deleting
    page: Callable[[dict], str]
    parent: Callable[[dict], str]
    #: the new object's path from the define form's path and answer
    defined_path: Callable[[dict, dict], dict]
    #: fields shown first (the rest under "more attributes")
    primary: tuple[str, ...] = ()
    skip: tuple[str, ...] = field(default=())

    def define_form(self) -> type[forms.Form]:
        return form_class(self.define, skip=self.skip, first=self.primary)

    def alter_form(self) -> type[forms.Form]:
        return form_class(self.alter, skip=self.skip, first=self.primary)

    def allowed(self, user, what: str, path: dict) -> bool:
        return _allowed(self.may_define if what == "define" else self.may_change, user, **path)

    def name(self, path: dict) -> str:
        return path[self.display.path[-1]]


def _broker_only(check):
    return lambda user, broker, **_: check(user, broker=broker)


KINDS: dict[str, Kind] = {
    "broker": Kind(
        key="broker",
        label="broker",
        define=ops.BrokerDefine,
        alter=ops.BrokerAlter,
        delete=ops.BrokerDelete,
        display=ops.BrokerDisplay,
        may_define=lambda user, **_: permissions.require_broker_define(user),
        may_change=lambda user, broker, **_: permissions.require_broker_admin(user, broker=broker),
        page=lambda p: reverse("dashboard-broker", args=[p["broker"]]),
        parent=lambda p: reverse("dashboard-overview"),
        defined_path=lambda p, body: {"broker": body["name"]},
        primary=("name", "description", "dead_letter_queue"),
    ),
    "queue": Kind(
        key="queue",
        label="queue",
        define=ops.QueueDefine,
        alter=ops.QueueAlter,
        delete=ops.QueueDelete,
        display=ops.QueueDisplay,
        may_define=_broker_only(permissions.require_broker_admin),
        may_change=lambda user, broker, queue, **_: permissions.require_queue_admin(user, broker=broker, queue=queue),
        page=lambda p: reverse("dashboard-queue", args=[p["broker"], p["queue"]]),
        parent=lambda p: reverse("dashboard-broker", args=[p["broker"]]),
        defined_path=lambda p, body: {"broker": p["broker"], "queue": body["name"]},
        primary=("name", "kind", "usage", "description", "max_depth"),
    ),
    "channel": Kind(
        key="channel",
        label="channel",
        define=channel_ops.ChannelDefine,
        alter=channel_ops.ChannelAlter,
        delete=channel_ops.ChannelDelete,
        display=channel_ops.ChannelDisplay,
        may_define=lambda user, **_: permissions.require_channel_operate(user),
        may_change=lambda user, **_: permissions.require_channel_operate(user),
        page=lambda p: reverse("dashboard-channels"),
        parent=lambda p: reverse("dashboard-channels"),
        defined_path=lambda p, body: {"channel": body["name"]},
        primary=("name", "source_broker", "transmission_queue", "target_broker", "target_url", "target_token"),
    ),
    "topic": Kind(
        key="topic",
        label="topic object",
        define=pubsub_ops.TopicDefine,
        alter=pubsub_ops.TopicAlter,
        delete=pubsub_ops.TopicDelete,
        display=pubsub_ops.TopicDisplay,
        may_define=_broker_only(permissions.require_broker_admin),
        may_change=_broker_only(permissions.require_broker_admin),
        page=lambda p: reverse("dashboard-topics", args=[p["broker"]]),
        parent=lambda p: reverse("dashboard-topics", args=[p["broker"]]),
        defined_path=lambda p, body: {"broker": p["broker"], "name": body["name"]},
    ),
    "subscription": Kind(
        key="subscription",
        label="subscription",
        define=pubsub_ops.SubscriptionDefine,
        alter=None,
        delete=pubsub_ops.SubscriptionDelete,
        display=pubsub_ops.SubscriptionDisplay,
        may_define=_broker_only(permissions.require_broker_admin),
        may_change=_broker_only(permissions.require_broker_admin),
        page=lambda p: reverse("dashboard-subscriptions", args=[p["broker"]]),
        parent=lambda p: reverse("dashboard-subscriptions", args=[p["broker"]]),
        defined_path=lambda p, body: {"broker": p["broker"], "name": body["name"]},
    ),
    "workflow": Kind(
        key="workflow",
        label="workflow",
        define=workflow_ops.WorkflowDefine,
        alter=workflow_ops.WorkflowAlter,
        delete=workflow_ops.WorkflowDelete,
        display=workflow_ops.WorkflowDisplay,
        may_define=_broker_only(permissions.require_broker_admin),
        may_change=_broker_only(permissions.require_broker_admin),
        page=lambda p: reverse("dashboard-workflows", args=[p["broker"]]),
        parent=lambda p: reverse("dashboard-workflows", args=[p["broker"]]),
        defined_path=lambda p, body: {"broker": p["broker"], "name": body["name"]},
    ),
}


def define_panel(key: str, user, path: dict) -> dict | None:
    """The define form a page embeds (its first fields shown, the rest folded), when the
    user may define that kind there; None otherwise."""
    kind = KINDS[key]
    if not kind.allowed(user, "define", path):
        return None
    form = kind.define_form()(auto_id=f"id_{key}_%s")
    return {
        "kind": kind,
        "form": form,
        "first": [form[name] for name in form.fields if name in kind.primary or not kind.primary],
        "more": [form[name] for name in form.fields if kind.primary and name not in kind.primary],
    }


def edit_links(key: str, user, path: dict) -> dict:
    """Which of alter and delete the user may use on an object (for its page's buttons)."""
    kind = KINDS[key]
    allowed = kind.allowed(user, "change", path)
    return {"alter": allowed and kind.alter is not None, "delete": allowed and kind.delete is not None}


def may_admin(user, broker: str) -> bool:
    """Admin on the whole broker: define, alter and delete its queues, topic objects,
    subscriptions and workflows."""
    return _allowed(permissions.require_broker_admin, user, broker=broker)

"""Plan and apply a definitions document (docs/definitions.md).

A plan compares the document with the platform: an object it names and the platform lacks is
created; one whose attributes differ (an attribute left out means its default) is altered;
with ``prune``, one the platform has and the document lacks is deleted. Then every change is
made, in order, through the same services REST calls (``queue_define``, ``channel_alter``,
``workflow_delete``...), inside one database transaction: a plan rolls it back, an apply
commits it only if every change was made, so a plan finds exactly what an apply would refuse,
with the services' own reasons (a queue holding messages keeps its kind, usage and read order;
it is deleted only with ``force``). The database's triggers change the definitions version in
that transaction (``brokers.models.DefinitionsVersion``): every process sees the new topology
at once, once.

Order: creations and alterations by kind (brokers, local queues, remote and alias queues,
channels, topics, subscriptions, workflows, users, grants), deletions first and the other
way round, so each object's references exist when it is made and are gone after it is."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction as db

from brokers.channels.definitions import channel_alter, channel_define, channel_delete
from baton_client.errors import InvalidInput, NotFound
from brokers.models import Channel, Grant, Queue, QueueKind
from brokers.services.access import grant_actions, revoke_actions
from brokers.services.brokers import broker_alter, broker_define, broker_delete
from brokers.services.queues import queue_alter, queue_define, queue_delete
from baton_client.errors import BatonError, DefinitionsConflict
from pubsub.services.subscriptions import subscription_define, subscription_delete
from pubsub.services.topics import topic_alter, topic_define, topic_delete
from workflows.services.definitions import workflow_alter, workflow_define, workflow_delete

from .document import KIND, KINDS, Document, Kind
from .selectors import attribute_defaults, definitions_state, step_form
from .users import user_alter, user_define, user_delete

#: Attributes that cannot change in place: the object must be deleted and defined again.
FIXED = {"topic": {"topic_string"}, "subscription": None}  # None: no attribute of it


@dataclass
class Change:
    action: str
    kind: Kind
    broker: str
    name: str
    #: the object's naming fields and the attributes given to the service
    values: dict[str, Any]
    #: what the plan shows (a secret as its reference)
    shown: dict[str, Any] = field(default_factory=dict)
    #: the object's place in the document (``queues[3]``), when it is there
    where: str | None = None
    #: within its kind, the order of making (local queues before remote and alias queues)
    phase: int = 0

    def render(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "kind": self.kind.name,
            "broker": self.broker,
            "name": self.name,
            "attributes": self.shown,
        }

    def refusal(self, code: str, message: str) -> dict[str, str]:
        return {"kind": self.kind.name, "broker": self.broker, "name": self.name, "code": code, "message": message}

    @property
    def label(self) -> str:
        at = f"{self.broker}/{self.name}" if self.broker and self.kind.name != "broker" else self.name
        return f"{self.where or self.kind.plural} ({self.kind.name} {at})"


def _given(kind: Kind, item) -> tuple[dict[str, Any], dict[str, Any]]:
    """An item of the document as (its naming fields, the attributes it gives), in document form."""
    dumped = item.model_dump(mode="json")
    names = {f: dumped[f] for f in kind.identity}
    given = {f: dumped[f] for f in kind.attributes if f in item.model_fields_set}
    if kind.name == "workflow" and "steps" in given:
        given["steps"] = [step_form(s["name"], s["queue"], s["compensation_queue"], s["next"]) for s in given["steps"]]
    if kind.name == "subscription":
        for switch in ("activation_topic", "deactivation_topic"):
            if switch in given:
                given[switch] = given[switch] or ""
    if kind.name == "grant":
        given["actions"] = [a for a in Grant.ACTIONS if a in set(given["actions"])]
    return names, given


def _invalid(problems: dict[str, list[str]]) -> InvalidInput:
    first = next(iter(problems.items()))
    return InvalidInput(f"The document is not valid: {first[0]}: {first[1][0]}", errors=problems)


def _token(env: dict | None, where: str) -> str:
    """A channel's ``target_token`` from the environment variable the document names."""
    if env is None:
        return ""
    value = os.environ.get(env["env"])
    if not value:
        raise _invalid({f"{where}.target_token": [f"The environment variable {env['env']} is not set."]})
    return value


def _phase(kind: Kind, values: dict[str, Any]) -> int:
    """Local queues (transmission queues among them) before the remote and alias queues that
    name them (``values``: the queue as it is, or will be)."""
    return int(kind.name == "queue" and values.get("kind", QueueKind.LOCAL) != QueueKind.LOCAL)


def _changes(document: Document, *, prune: bool) -> tuple[list[Change], list[dict[str, str]]]:
    """The changes the document makes, in the order they are made, and those refused before
    any is tried (an attribute that cannot change in place)."""
    scope = document.broker
    problems: dict[str, list[str]] = {}
    current = definitions_state(broker=scope)
    tokens = dict(Channel.objects.values_list("name", "target_token"))
    have: dict[str, dict[tuple, dict]] = {k.name: {k.key(v): v for v in current[k.plural]} for k in KINDS}
    # what the document wants: every attribute (left out: its default)
    wanted: dict[str, dict[tuple, tuple[str | None, dict, dict, dict]]] = {k.name: {} for k in KINDS}
    for kind in KINDS:
        for i, item in enumerate(getattr(document, kind.plural)):
            names, given = _given(kind, item)
            where = f"{kind.plural}[{i}]"
            broker = names.get(kind.broker_field) if kind.broker_field in names else given.get(kind.broker_field)
            if scope is not None and kind.broker_field and broker != scope:
                problems.setdefault(f"{where}.{kind.broker_field}", []).append(
                    f"The document covers broker {scope!r} only."
                )
            wanted[kind.name][kind.key({**names, **given})] = (where, names, given, {})
    if problems:
        raise _invalid(problems)
    # queues take some defaults from their broker (as it will be); a broker in the document has
    # its dead-letter queue as broker_define makes it unless the document says otherwise
    brokers = {name: v for (name, _), v in have["broker"].items()}
    dead_letter = {name: v["dead_letter_queue"] for name, v in brokers.items()}
    for key, (_where, names, given, full) in wanted["broker"].items():
        full.update(attribute_defaults(KIND["broker"], names, {}), **names, **given)
        brokers[key[0]] = full
        implied = {"broker": key[0], "name": full["dead_letter_queue"]}
        if key not in have["broker"]:
            predicted = attribute_defaults(KIND["queue"], implied, brokers)
            have["queue"][(key[0], implied["name"])] = {**predicted, **implied}
        wanted["queue"].setdefault((key[0], implied["name"]), (None, implied, {}, {}))
    for kind in KINDS[1:]:
        for _where, names, given, full in wanted[kind.name].values():
            values = {**names, **given}
            full.update(attribute_defaults(kind, values, brokers), **values)

    creates: list[list[Change]] = [[] for _ in KINDS]
    deletes: list[list[Change]] = [[] for _ in KINDS]
    refused: list[dict[str, str]] = []
    for position, kind in enumerate(KINDS):
        for key, (where, names, given, full) in sorted(wanted[kind.name].items()):
            broker, name = key
            if key not in have[kind.name]:
                if where is None:
                    continue  # an implied dead-letter queue its broker's service defines
                values = {**names, **given}
                creates[position].append(Change("create", kind, broker, name, values, given, where, _phase(kind, full)))
                continue
            now = have[kind.name][key]
            differ = {a: full.get(a) for a in kind.attributes if full.get(a) != now.get(a)}
            if kind.name == "channel":
                differ.pop("target_token", None)
                token = _token(full.get("target_token"), where or kind.plural)
                if token != tokens.get(name, ""):
                    differ["target_token"] = full.get("target_token")
            if not differ:
                continue
            change = Change("alter", kind, broker, name, {**names, **differ}, differ, where, _phase(kind, full))
            fixed = FIXED.get(kind.name, set())
            if fixed is None or fixed & set(differ):
                what = ", ".join(sorted(differ if fixed is None else fixed & set(differ)))
                refused.append(
                    change.refusal(
                        "immutable",
                        f"{what} of {kind.name} {name!r} cannot change in place: remove it from the document, "
                        "apply with prune, then add it again.",
                    )
                )
                continue
            creates[position].append(change)
        if prune:
            for key, now in sorted(have[kind.name].items()):
                if key in wanted[kind.name] or (kind.name == "user" and scope is not None):
                    continue
                broker, name = key
                if kind.name == "queue" and dead_letter.get(broker) == name:
                    continue  # kept with its broker, or deleted with it
                deletes[position].append(Change("delete", kind, broker, name, {**now}, {}, None, _phase(kind, now)))
    ordered: list[Change] = []
    for position in reversed(range(len(KINDS))):  # remote and alias queues before local ones
        ordered += sorted(deletes[position], key=lambda c: -c.phase)
    for position in range(len(KINDS)):  # local queues before remote and alias ones
        ordered += sorted(creates[position], key=lambda c: c.phase)
    return ordered, refused


def _perform(change: Change, *, user, force: bool) -> None:
    """Make one change through the service REST uses for it."""
    kind, values, action = change.kind.name, dict(change.values), change.action
    if kind == "broker":
        name = values.pop("name")
        if action == "delete":
            broker_delete(name=name, purge=force)
        else:
            (broker_define if action == "create" else broker_alter)(name=name, **values)
    elif kind == "queue":
        broker, name = values.pop("broker"), values.pop("name")
        if action == "delete":
            queue_delete(broker=broker, name=name, purge=force)
        elif action == "create" and not Queue.objects.filter(broker__name=broker, name=name).exists():
            queue_define(broker=broker, name=name, user=user, **values)
        else:  # altered, or made already by its broker's service (a dead-letter queue)
            queue_alter(broker=broker, name=name, user=user, **values)
    elif kind == "channel":
        name = values.pop("name")
        if action == "delete":
            channel_delete(name=name)
            return
        if "target_token" in values:
            values["target_token"] = _token(values["target_token"], change.where or "channels")
        (channel_define if action == "create" else channel_alter)(name=name, **values)
    elif kind == "topic":
        if action == "delete":
            topic_delete(broker=values["broker"], name=values["name"])
        else:
            (topic_define if action == "create" else topic_alter)(**values)
    elif kind == "subscription":
        if action == "delete":
            subscription_delete(broker=values["broker"], name=values["name"])
        else:
            subscription_define(**values)
    elif kind == "workflow":
        if action == "delete":
            workflow_delete(broker=values["broker"], name=values["name"])
        else:
            (workflow_define if action == "create" else workflow_alter)(**values)
    elif kind == "user":
        if action == "delete":
            if user is not None and user.get_username() == values["username"]:
                raise DefinitionsConflict("A document cannot delete the user who applies it.")
            user_delete(username=values["username"])
        else:
            (user_define if action == "create" else user_alter)(**values)
    elif kind == "grant":
        where = {"username": values["user"], "broker": values["broker"], "queue": values["queue"]}
        row = Grant.objects.filter(user__username=where["username"], broker=where["broker"], queue=where["queue"])
        row = row.first()
        had = set(row.actions) if row is not None else set()
        wanted = set() if action == "delete" else set(values["actions"])
        if wanted - had:
            grant_actions(**where, actions=sorted(wanted - had))
        if had - wanted:
            revoke_actions(**where, actions=sorted(had - wanted))


def _made(changes: list[Change], refused: list[dict[str, str]], *, user, force: bool) -> list[Change]:
    """Make every change (each in a savepoint, so one refused leaves the others to be tried);
    the refused ones are added to ``refused``. Raises InvalidInput naming every object whose
    definition is not valid, or refers to something that does not exist."""
    made, problems = [], {}
    for change in changes:
        try:
            with db.atomic():
                _perform(change, user=user, force=force)
        except (InvalidInput, NotFound) as exc:
            fields = getattr(exc, "errors", None) or {}
            for name, texts in fields.items() if fields else [("", [exc.message])]:
                problems.setdefault(f"{change.label}{'.' + name if name else ''}", []).extend(texts)
        except BatonError as exc:
            refused.append(change.refusal(exc.code, exc.message))
        else:
            made.append(change)
    if problems:
        raise _invalid(problems)
    return made


def definitions_plan(*, document: Document, prune: bool = False, force: bool = False, user=None) -> dict[str, Any]:
    """The changes ``document`` would make and those that would be refused (with their
    reasons), found by making them in a database transaction that is then rolled back:
    nothing changes."""
    with db.atomic():
        changes, refused = _changes(document, prune=prune)
        made = _made(changes, refused, user=user, force=force)
        db.set_rollback(True)
    return {"changes": [c.render() for c in made], "refused": refused}


def definitions_apply(*, document: Document, prune: bool = False, force: bool = False, user=None) -> dict[str, Any]:
    """Make every change ``document`` asks for, or none (one database transaction): raises
    DefinitionsConflict (409) listing what would be refused, InvalidInput (400) for a
    document that is not valid. Deletes only with ``prune``; a queue or broker holding
    messages only with ``force`` (its messages are discarded)."""
    with db.atomic():
        changes, refused = _changes(document, prune=prune)
        made = _made(changes, refused, user=user, force=force)
        if refused:
            raise DefinitionsConflict(
                f"{len(refused)} change(s) cannot be made, so none was: "
                + "; ".join(f"{r['kind']} {r['name']}: {r['message']}" for r in refused[:3]),
                refused=refused,
            )
    return {"changes": [c.render() for c in made], "refused": []}

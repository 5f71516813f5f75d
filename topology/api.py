"""The definitions' operations (superusers only), each defined once (``brokers.api.operations``)
for REST and the OpenAPI schema: export, plan, apply, and the document's JSON Schema."""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field, ValidationError, field_validator

from brokers.api.operations.base import Model, Operation
from brokers.api.operations.definitions import Name
from brokers.services.invalid_input import TYPE_TEXTS
from brokers.names import NAME_MESSAGE, NAME_PATTERN
from baton_client.errors import InvalidInput, PermissionDenied

from .document import GRANT_QUEUE_PATTERN, KINDS, Document, document_schema
from .selectors import definitions_export
from .services import definitions_apply, definitions_plan

TAG = "definitions"
KIND_OF_LIST = {k.plural: k for k in KINDS}


def require_definitions(user) -> None:
    if not getattr(user, "is_superuser", False):
        raise PermissionDenied("You may not do that: only a superuser may export or apply definitions.")


def _object(data: Any, loc: list) -> str:
    """`` (queue QM1/Q1)``: the object an error's location falls in, by its names as given."""
    if len(loc) < 2 or not isinstance(loc[1], int) or loc[0] not in KIND_OF_LIST or not isinstance(data, dict):
        return ""
    items = data.get(loc[0])
    item = items[loc[1]] if isinstance(items, list) and loc[1] < len(items) else None
    if not isinstance(item, dict):
        return ""
    kind = KIND_OF_LIST[loc[0]]
    names = [str(item[f]) for f in kind.identity if isinstance(item.get(f), (str, int)) and item.get(f) != ""]
    return f" ({kind.name} {'/'.join(names)})" if names else ""


def _text(item: dict) -> str:
    kind = item["type"]
    if kind == "literal_error":
        return f"Must be {item['ctx']['expected']}."
    if kind == "string_pattern_mismatch":
        pattern = item["ctx"]["pattern"]
        return NAME_MESSAGE if pattern in (NAME_PATTERN, GRANT_QUEUE_PATTERN) else f"Must match {pattern}."
    return TYPE_TEXTS.get(kind) or item["msg"].rstrip(".") + "."


def document_invalid(error: ValidationError, data: Any = None) -> InvalidInput:
    """A document's validation errors as 400 ``invalid``, each named by the object and field
    (``queues[3].max_depth``); the message names the first one's object too."""
    errors: dict[str, list[str]] = {}
    first = ""
    for item in error.errors(include_url=False):
        loc = [p for p in item["loc"] if p not in ("str", "int", "bool", "none", "EnvRef")]
        parts: list[str] = []
        for part in loc:
            if isinstance(part, int) and parts:
                parts[-1] += f"[{part}]"
            else:
                parts.append(str(part))
        name = ".".join(parts) or "body"
        if item["type"] in ("value_error", "assertion_error"):
            text = str((item.get("ctx") or {}).get("error") or item["msg"])
            if not loc and ": " in text:
                name, _, text = text.partition(": ")
        else:
            text = _text(item)
        errors.setdefault(name, []).append(text)
        first = first or f"{name}{_object(data, loc)}: {text}"
    return InvalidInput(f"The document is not valid: {first}", errors=errors)


class DocumentOperation(Operation):
    """Plan and apply: the body is a document, parsed into its models once."""

    tag = TAG
    method = "post"
    errors = (400,)

    @classmethod
    def parse(cls, data: Any) -> Model:
        if not isinstance(data, dict):
            raise InvalidInput("The request body must be a JSON object.", errors={"body": ["Must be an object."]})
        try:
            return cls.Input.model_validate(data)
        except ValidationError as error:
            raise document_invalid(error, data) from None


class ChangeOut(Model):
    action: str = Field(description="create, alter or delete.")
    kind: str
    broker: str
    name: str
    attributes: dict[str, Any]


class RefusedOut(Model):
    kind: str
    broker: str
    name: str
    code: str
    message: str


class Outcome(Model):
    changes: list[ChangeOut]
    refused: list[RefusedOut]


class DefinitionsExport(Operation):
    """The document of every definition (superusers): sorted, the same bytes for the same definitions."""

    route = "definitions/"
    url_name = "definitions"
    method = "get"
    query = True
    operation_id = "definitions_export"
    tag = TAG
    errors = (400, 404)

    class Input(Model):
        broker: Name | None = Field(None, description="Only this broker's objects (empty: every broker).")
        all: bool = Field(False, description="Every attribute, not only those that differ from their defaults.")

        @field_validator("broker", mode="before")
        @classmethod
        def _empty_is_every_broker(cls, value: Any) -> Any:
            return None if value == "" else value

    Output = Document

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        require_definitions(user)
        return 200, definitions_export(broker=data.broker, all=data.all)


class DefinitionsPlan(DocumentOperation):
    """The changes a document would make, and those that would be refused; changes nothing."""

    route = "definitions/plan/"
    url_name = "definitions-plan"
    operation_id = "definitions_plan"

    class Input(Document):
        prune: bool = Field(False, description="Also delete what the document does not name.")
        force: bool = Field(False, description="As apply's: queues holding messages may be deleted.")

    Output = Outcome

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        require_definitions(user)
        return 200, definitions_plan(document=data, prune=data.prune, force=data.force, user=user)


class DefinitionsApply(DocumentOperation):
    """Apply a document: every change or none (409 definitions_conflict with what is refused)."""

    route = "definitions/apply/"
    url_name = "definitions-apply"
    operation_id = "definitions_apply"
    errors = (400, 409)

    class Input(Document):
        prune: bool = Field(False, description="Also delete what the document does not name.")
        force: bool = Field(False, description="Delete queues and brokers even if they hold messages (discarded).")

    Output = Outcome

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        require_definitions(user)
        return 200, definitions_apply(document=data, prune=data.prune, force=data.force, user=user)


class DefinitionsSchema(Operation):
    """The definitions document's JSON Schema, made from the models that validate it."""

    route = "definitions/schema/"
    url_name = "definitions-schema"
    method = "get"
    query = True
    operation_id = "definitions_schema"
    tag = TAG

    class Input(Model):
        pass

    class Output(Model):
        model_config = ConfigDict(extra="allow")

    @classmethod
    def perform(cls, user, data: Input) -> tuple[int, dict[str, Any]]:
        require_definitions(user)
        return 200, document_schema()

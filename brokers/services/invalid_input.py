"""A pydantic ValidationError as Baton's 400 ``invalid``, naming every bad field with a text a
person understands: one translation for the API's operations and the dashboard's forms
(dashboard/forms.py)."""

from __future__ import annotations

from pydantic import ValidationError

from baton_client.errors import InvalidInput
from ..names import NAME_MESSAGE, NAME_PATTERN

#: At most this many message properties, each named by 1 to PROPERTY_KEY_LENGTH characters
#: (message_input.MessageInput enforces them; they count towards the message length too).
MAX_PROPERTIES = 100
PROPERTY_KEY_LENGTH = 128
#: A message id, correlation id or group id: 24 bytes as 48 hexadecimal characters.
HEX_ID_PATTERN = r"^[0-9a-fA-F]{48}$"

#: What a person is told when a message field is not valid (whatever pydantic found).
FIELD_TEXTS = {
    "correl_id": "Must be 48 hexadecimal characters (24 bytes).",
    "group_id": "Must be 48 hexadecimal characters (24 bytes).",
    "msg_type": "Must be one of datagram, request, reply, report.",
    "priority": "Must be a whole number from 0 to 9.",
    "persistence": "Must be persistent, non_persistent or queue_default.",
    "expiry_ms": "Must be a positive whole number of milliseconds (at most ten years).",
    "format": "Must be a string of at most 100 characters.",
    "reply_to_queue": NAME_MESSAGE,
    "reply_to_broker": NAME_MESSAGE,
    "report": "Must be a list drawn from coa, cod, expiry, exception.",
    "properties": f"Must be an object of at most {MAX_PROPERTIES} properties, each named by 1 to "
    f"{PROPERTY_KEY_LENGTH} characters.",
    "refers_to": 'Must be {"msg_id": <48 hex>, "action": cancel|replace|reprioritise}.',
    "body": "Must be a string; send bytes as body_base64.",
    "body_base64": "Must be valid base64.",
    "dedup_key": "Must be a string of 1 to 200 characters.",
    "dedup_retention_ms": "Must be a positive whole number of milliseconds (at most ten years), with a dedup_key.",
}

#: What a person is told for a kind of pydantic error, when the field has no text of its own.
TYPE_TEXTS = {
    "missing": "Required.",
    "extra_forbidden": "Unknown field.",
    "bool_type": "Must be true or false.",
    "bool_parsing": "Must be true or false.",
    "int_type": "Must be a whole number.",
    "int_parsing": "Must be a whole number.",
    "int_from_float": "Must be a whole number.",
    "float_type": "Must be a number.",
    "float_parsing": "Must be a number.",
    "string_type": "Must be a string.",
    "list_type": "Must be a list.",
    "dict_type": "Must be an object.",
    "model_type": "Must be an object.",
    "model_attributes_type": "Must be an object.",
}


def _number(value):
    """A bound as a person writes it: 0, not 0.0 (a float field's whole-number bound)."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _bound_text(item: dict) -> str | None:
    """The text of a choice or range error, in the words Django's model validation used
    (what the commands said before they parsed through the operations' inputs)."""
    kind, ctx = item["type"], item.get("ctx") or {}
    if kind == "literal_error":
        value = item.get("input")
        if isinstance(value, str) and len(value) <= 100:
            return f"Value {value!r} is not a valid choice."
        return "Not a valid choice."
    if kind == "greater_than_equal":
        return f"Ensure this value is greater than or equal to {_number(ctx['ge'])}."
    if kind == "less_than_equal":
        return f"Ensure this value is less than or equal to {_number(ctx['le'])}."
    if kind == "string_too_long":
        return f"Ensure this value has at most {ctx['max_length']} characters."
    if kind in ("string_too_short", "too_short"):
        least = ctx["min_length"]
        if least == 1:
            return "Must not be empty."
        return f"Ensure this value has at least {least} {'characters' if kind == 'string_too_short' else 'items'}."
    if kind == "string_pattern_mismatch" and ctx.get("pattern") == HEX_ID_PATTERN:
        return "Must be 48 hexadecimal characters (24 bytes)."
    if kind == "string_pattern_mismatch" and ctx.get("pattern") == NAME_PATTERN:
        return NAME_MESSAGE
    return None


def where(loc: tuple) -> str:
    """A pydantic error location as the API names fields: the field of the request, or of a
    message of a batch (``messages[1].priority``); not deeper."""
    if len(loc) >= 3 and loc[0] == "messages" and isinstance(loc[1], int):
        return f"messages[{loc[1]}].{loc[2]}"
    if loc and loc[0] == "messages" and len(loc) == 2 and isinstance(loc[1], int):
        return f"messages[{loc[1]}]"
    return str(loc[0]) if loc else "body"


def invalid(error: ValidationError, *, message: str = "The request is not valid.") -> InvalidInput:
    """A pydantic ValidationError as the API's 400 ``invalid`` naming every bad field."""
    errors: dict[str, list[str]] = {}
    for item in error.errors(include_url=False, include_input=True):
        loc = item["loc"]
        if item["type"] in ("value_error", "assertion_error") and loc == ():
            text = str(item.get("ctx", {}).get("error") or item["msg"])
            name, _, text = text.partition(": ") if ": " in text else ("body", "", text)
        else:
            # union members add their type to the location (str, int, ...): drop them
            loc = tuple(p for p in loc if not (isinstance(p, str) and p in {"str", "int", "float", "bool", "none"}))
            name = where(loc)
            field = name.rpartition(".")[2]
            if item["type"] == "value_error":
                text = str(item.get("ctx", {}).get("error") or item["msg"])
            elif item["type"] not in ("missing", "extra_forbidden") and field in FIELD_TEXTS:
                text = FIELD_TEXTS[field]
            else:
                text = TYPE_TEXTS.get(item["type"]) or _bound_text(item) or item["msg"].rstrip(".") + "."
        if text not in errors.get(name, []):
            errors.setdefault(name, []).append(text)
    return InvalidInput(message, errors=errors)

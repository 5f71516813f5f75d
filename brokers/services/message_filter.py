"""Filters for looking at a queue's messages (the console's message browser, REST browse): a
substring of the body and a property, applied by the database, so pages stay server-side.
Both are reads: nothing here changes a message.

- ``body_contains``: 1 to 200 characters; matches a message whose body holds their UTF-8
  bytes anywhere (text or binary bodies alike; case-sensitive, as RabbitMQ's and Service Bus
  Explorer's body searches are).
- ``property``: ``name`` (the message has that property) or ``name=value`` (its value, as
  text, is ``value``: ``colour=red``, ``attempt=3``; JSON ``true`` reads ``true`` on
  PostgreSQL and ``1`` on SQLite). The name is 1 to 100 characters of A-Z a-z 0-9 ``_ . : -``;
  the value at most 200 characters, without NUL (no JSON string holds one as text).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.db.models import BinaryField, F, Func, IntegerField, Q, QuerySet, TextField, Value
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast

from baton_client.errors import InvalidInput

BODY_CONTAINS_MAX = 200
PROPERTY_NAME = re.compile(r"^[A-Za-z0-9_.:\-]{1,100}$")
PROPERTY_VALUE_MAX = 200


@dataclass(frozen=True)
class MessageFilter:
    body_contains: bytes | None = None
    property_name: str | None = None
    #: None: the property only has to be there.
    property_value: str | None = None

    @property
    def active(self) -> bool:
        return self.body_contains is not None or self.property_name is not None


BODY_CONTAINS_TEXT = f"A body filter is 1 to {BODY_CONTAINS_MAX} characters."
PROPERTY_TEXT = (
    "A property filter is name or name=value: the name 1 to 100 characters of A-Z a-z 0-9 _ . : -, "
    f"the value at most {PROPERTY_VALUE_MAX} characters (no NUL)."
)
#: The fields of a request that make its filter (their errors make the filter's message).
FILTER_FIELDS = ("body_contains", "property")


def body_contains_problems(value: str) -> list[str]:
    """What is wrong with a body filter (blank: no filter, nothing wrong)."""
    return [BODY_CONTAINS_TEXT] if len(value) > BODY_CONTAINS_MAX else []


def property_problems(value: str) -> list[str]:
    """What is wrong with a property filter (blank: no filter, nothing wrong)."""
    if not value:
        return []
    name, _, raw = value.partition("=")
    if not PROPERTY_NAME.fullmatch(name) or len(raw) > PROPERTY_VALUE_MAX or "\x00" in raw:
        return [PROPERTY_TEXT]
    return []


def message_filter_of(*, body_contains: str | None = None, property: str | None = None) -> MessageFilter:
    """The filter of parts the grammar accepted (``MessageBrowse.Input`` checks them with the
    ``*_problems`` functions above); blank parts are no filter."""
    name, has_value, value = property.partition("=") if property else (None, "", None)
    return MessageFilter(
        body_contains=body_contains.encode("utf-8", "surrogatepass") if body_contains else None,
        property_name=name,
        property_value=value if has_value else None,
    )


def message_filter_invalid(errors: dict[str, list[str]]) -> InvalidInput:
    """The 400 ``invalid`` for a filter the grammar refuses: its message says every reason."""
    return InvalidInput(
        "The message filter is not valid: " + " ".join(m for ms in errors.values() for m in ms), errors=errors
    )


class _BodyPosition(Func):
    """Where ``needle`` starts in ``body`` (1-based; 0 when it is not there), bytes on both
    databases: SQLite's ``instr`` on BLOBs, PostgreSQL's ``position`` on ``bytea``."""

    function = "instr"
    output_field = IntegerField()

    def as_postgresql(self, compiler, connection, **extra):
        body_sql, body_params = compiler.compile(self.source_expressions[0])
        needle_sql, needle_params = compiler.compile(self.source_expressions[1])
        return f"position({needle_sql} in {body_sql})", [*needle_params, *body_params]


def message_filter_apply(qs: QuerySet, f: MessageFilter, *, also: Q | None = None) -> QuerySet:
    """``qs`` (messages) narrowed to those the filter matches, or ``also`` matches."""
    if not f.active:
        return qs
    match = Q()
    if f.body_contains is not None:
        qs = qs.alias(_body_at=_BodyPosition(F("body"), Value(f.body_contains, output_field=BinaryField())))
        match &= Q(_body_at__gt=0)
    if f.property_name is not None:
        if f.property_value is None:
            match &= Q(properties__has_key=f.property_name)
        else:
            qs = qs.alias(_property=Cast(KeyTextTransform(f.property_name, "properties"), TextField()))
            match &= Q(_property=f.property_value)
    return qs.filter(match | also if also is not None else match)

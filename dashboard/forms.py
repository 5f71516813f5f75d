"""What the queue page's forms send, parsed where it enters (the views call these before
any service): the put form's message through ``MessageIn`` (the message part of
``MessagePut``'s input, as REST and the ``put`` command parse it), and the purge form's
count. Bad input is a 400 ``invalid`` naming the field; nothing is half-applied."""

from __future__ import annotations

import json

from pydantic import ValidationError

from brokers.services.invalid_input import invalid
from brokers.services.message_input import MessageIn, MessageInput
from baton_client.errors import InvalidInput


def _not_json(name: str):
    raise ValueError(f"{name} is not JSON")


def put_form(*, body: str, priority: str = "", format: str = "", properties: str = "") -> MessageInput:
    """The message as typed into the put form: a body, and optionally a priority, a format
    and properties as a JSON object (blank: the queue's defaults)."""
    data: dict = {"body": body}
    if priority.strip():
        try:
            data["priority"] = int(priority)
        except ValueError as exc:
            raise InvalidInput(
                "Priority must be a whole number from 0 to 9.", errors={"priority": ["Invalid."]}
            ) from exc
    if format.strip():
        data["format"] = format.strip()
    if properties.strip():
        try:
            data["properties"] = json.loads(properties, parse_constant=_not_json)
        except ValueError as exc:
            raise InvalidInput("Properties must be a JSON object.", errors={"properties": ["Not JSON."]}) from exc
    try:
        return MessageIn.model_validate(data).to_input()
    except ValidationError as error:
        raise invalid(error, message="The message is not valid.") from None


def purge_count(text: str) -> int:
    """The purge form's count (the number the operator confirmed): a whole number, 0 or more."""
    try:
        count = int(text)
    except ValueError:
        count = -1
    if count < 0:
        raise InvalidInput("The count must not be negative.", errors={"count": ["Negative."]})
    return count


#: The broker page's queue list: sort keys (a leading '-': largest first) and page size.
QUEUE_SORTS = ("name", "-depth", "-available", "-uncommitted_puts", "-in_flight", "-locked", "kind")
QUEUE_PAGE = 50
QUEUE_SORT_LABELS = [
    (key, key.lstrip("-").replace("_", " ") + ", most first" * key.startswith("-")) for key in QUEUE_SORTS
]


def queue_list_form(query) -> dict:
    """The broker page's queue list query: ``name`` (contains, at most 48 characters),
    ``kind`` (local, remote, alias or blank), ``sort`` (of ``QUEUE_SORTS``), ``page`` (from 1)."""
    from brokers.models import QueueKind

    name, kind = query.get("name", "").strip(), query.get("kind", "")
    sort, page = query.get("sort", "name") or "name", query.get("page", "1") or "1"
    if len(name) > 48:
        raise InvalidInput("name: at most 48 characters.", errors={"name": ["At most 48 characters."]})
    if kind and kind not in QueueKind.values:
        raise InvalidInput(
            f"kind: one of {', '.join(QueueKind.values)}.", errors={"kind": [f"Not one of {QueueKind.values}."]}
        )
    if sort not in QUEUE_SORTS:
        raise InvalidInput(f"sort: one of {', '.join(QUEUE_SORTS)}.", errors={"sort": ["Not a sort key."]})
    if not page.isdigit() or int(page) < 1:
        raise InvalidInput("page: a whole number from 1.", errors={"page": ["Not a page number."]})
    return {"name": name, "kind": kind, "sort": sort, "page": int(page)}

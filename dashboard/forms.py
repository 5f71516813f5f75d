"""What the queue page's forms send, parsed where it enters (the views call these before
any service): the put form's message through ``MessageIn`` (the message part of
``MessagePut``'s input, as REST and the ``put`` command parse it), and the purge form's
count. Bad input is a 400 ``invalid`` naming the field; nothing is half-applied."""

from __future__ import annotations

import json

from pydantic import ValidationError

from brokers.services.invalid_input import invalid
from brokers.services.message_input import MessageIn, MessageInput
from config.errors import InvalidInput


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

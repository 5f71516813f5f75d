"""STOMP headers <-> message fields (docs/api.md, "STOMP"; docs/stomp.md, "Headers").

On SEND: ``correlation-id`` (48 hex characters: the correl_id; anything else is kept as a
property of that name), ``reply-to`` (``/queue/{name}``: reply_to_queue; anything else a
property), ``priority`` (0-9), ``persistent`` (true/false), ``expires`` (milliseconds since
the epoch, 0 = never: the time left becomes expiry_ms), ``content-type`` (format). Every
other header (but the frame's own: destination, transaction, receipt, content-length) is a
property, a text. A MESSAGE carries them back, with the properties first-come.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

from brokers.models import Message
from brokers.names import NAME
from baton_client.errors import InvalidInput

from .frames import Frame

HEX48 = re.compile(r"^[0-9a-fA-F]{48}$")
QUEUE_NAME = NAME
#: Headers of the frame itself, never properties.
FRAME_HEADERS = frozenset({"destination", "transaction", "receipt", "content-length"})
#: Headers a MESSAGE sets itself: a property of one of these names is not repeated.
MESSAGE_HEADERS = frozenset(
    {
        "destination",
        "message-id",
        "subscription",
        "ack",
        "content-length",
        "content-type",
        "correlation-id",
        "reply-to",
        "priority",
        "persistent",
        "expires",
        "receipt",
        "transaction",
    }
)
#: Properties a publication's copy carries that the MESSAGE says otherwise (its destination).
_COPY_PROPERTIES = frozenset({"topic", "subscription"})
MAX_PROPERTIES = 100


def message_fields(frame: Frame) -> dict[str, Any]:
    """The message fields (MessageIn's names) of a SEND frame. Raises InvalidInput naming
    the header when one is not valid."""
    fields: dict[str, Any] = {}
    properties: dict[str, str] = {}
    for name, value in frame.as_dict().items():
        if name in FRAME_HEADERS or name.startswith("x-baton-"):
            continue
        if name == "correlation-id":
            if HEX48.match(value):
                fields["correl_id"] = value
            else:
                properties[name] = value
        elif name == "reply-to":
            queue = value[len("/queue/") :] if value.startswith("/queue/") else None
            if queue is not None and QUEUE_NAME.match(queue):
                fields["reply_to_queue"] = queue
            else:
                properties[name] = value
        elif name == "priority":
            if not (value.isascii() and value.isdigit() and 0 <= int(value) <= 9):
                raise InvalidInput(
                    f"The priority header must be a whole number from 0 to 9, not {value[:40]!r}.",
                    errors={"priority": ["Must be a whole number from 0 to 9."]},
                )
            fields["priority"] = int(value)
        elif name == "persistent":
            if value not in ("true", "false"):
                raise InvalidInput(
                    f"The persistent header must be true or false, not {value[:40]!r}.",
                    errors={"persistent": ["Must be true or false."]},
                )
            fields["persistence"] = "persistent" if value == "true" else "non_persistent"
        elif name == "expires":
            if not (value.isascii() and value.isdigit()):
                raise InvalidInput(
                    "The expires header is the time it expires, in milliseconds since the epoch "
                    f"(0: never), not {value[:40]!r}.",
                    errors={"expires": ["Must be a whole number."]},
                )
            at = int(value)
            if at:
                fields["expiry_ms"] = min(max(1, at - int(time.time() * 1000)), 315_360_000_000)
        elif name == "content-type":
            fields["format"] = value
        else:
            properties[name] = value
    if len(properties) > MAX_PROPERTIES:
        raise InvalidInput(
            f"At most {MAX_PROPERTIES} headers become properties of a message.", errors={"headers": ["Too many."]}
        )
    if properties:
        fields["properties"] = properties
    return fields


def message_headers(message: Message, *, destination: str, subscription: str, ack: str | None) -> list[tuple[str, str]]:
    """The headers of the MESSAGE frame of a message as the get operation got it."""
    properties = message.properties or {}
    if "topic" in properties and destination.startswith("/topic/"):
        destination = "/topic/" + str(properties["topic"])
    headers = [("destination", destination), ("message-id", message.msg_id), ("subscription", subscription)]
    if ack is not None:
        headers.append(("ack", ack))
    if message.format:
        headers.append(("content-type", message.format))
    correlation = message.correl_id or properties.get("correlation-id")
    if isinstance(correlation, str):
        headers.append(("correlation-id", correlation))
    reply_to = "/queue/" + message.reply_to_queue if message.reply_to_queue else properties.get("reply-to")
    if isinstance(reply_to, str):
        headers.append(("reply-to", reply_to))
    headers.append(("priority", str(message.priority)))
    headers.append(("persistent", "true" if message.persistent else "false"))
    if message.expires_at:
        headers.append(("expires", str(int(message.expires_at.timestamp() * 1000))))
    if message.delivery_count > 1:
        headers.append(("redelivered", "true"))
    for name, value in properties.items():
        if name in MESSAGE_HEADERS or (name in _COPY_PROPERTIES and destination.startswith("/topic/")):
            continue
        headers.append((str(name), value if isinstance(value, str) else json.dumps(value)))
    return headers

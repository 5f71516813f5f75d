"""Turning a message as a client sends it into a validated :class:`MessageInput`, and a
stored message into what a client reads. :class:`MessageIn` is the one
definition of a message on input: it validates (about 3 µs a message), and the API's
schema and session docs are generated from it."""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from django.utils import timezone
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from ..models import Message, MessageType
from ..names import NAME_PATTERN, NAME_RULE
from .invalid_input import FIELD_TEXTS, HEX_ID_PATTERN, MAX_PROPERTIES, PROPERTY_KEY_LENGTH

HEX_ID = re.compile(HEX_ID_PATTERN)
#: Longest duplicate-detection key.
DEDUP_KEY_LENGTH = 200
#: Most properties a message may carry, and the longest property name (as Service Bus and
#: JMS bound them; each property's value counts towards the message length):
#: MAX_PROPERTIES and PROPERTY_KEY_LENGTH, defined with the texts that name them (invalid_input).


@dataclass
class MessageInput:
    body: bytes = b""
    correl_id: str | None = None
    group_id: str | None = None
    msg_type: str = MessageType.DATAGRAM
    priority: int | None = None
    persistence: str = "queue_default"
    expiry_ms: int | None = None
    format: str = ""
    reply_to_queue: str = ""
    reply_to_broker: str = ""
    report: list[str] = field(default_factory=list)
    properties: dict[str, Any] = field(default_factory=dict)
    refers_to: dict[str, str] | None = None
    #: Duplicate detection: a put of a key the queue has already taken is skipped.
    dedup_key: str | None = None
    #: How long the queue remembers ``dedup_key`` (None: until the queue is deleted).
    dedup_retention_ms: int | None = None


HexId = Annotated[
    str,
    StringConstraints(pattern=HEX_ID.pattern),
    Field(description="48 hexadecimal characters (24 bytes).", examples=["0" * 48]),
]
Name = Annotated[
    str,
    StringConstraints(pattern=NAME_PATTERN, max_length=48),
    Field(description=NAME_RULE + "."),
]


class RefersTo(BaseModel):
    """What a reactive message acts on."""

    model_config = ConfigDict(extra="forbid")
    msg_id: HexId
    action: Literal["cancel", "replace", "reprioritise"]


class MessageIn(BaseModel):
    """A message as a client sends it: ``body`` (text) or ``body_base64`` (bytes), not both;
    absent fields take the queue's defaults."""

    model_config = ConfigDict(extra="forbid", strict=True)
    body: str | None = Field(None, description="The body as text (stored as its UTF-8 bytes).")
    body_base64: str | None = Field(
        None, description="The body as standard base64.", json_schema_extra={"format": "byte"}
    )
    correl_id: HexId | None = None
    group_id: HexId | None = None
    msg_type: Literal["datagram", "request", "reply", "report"] | None = None
    priority: Annotated[int, Field(ge=0, le=9)] | None = None
    persistence: Literal["persistent", "non_persistent", "queue_default"] | None = None
    expiry_ms: Annotated[int, Field(ge=1, le=315_360_000_000)] | None = Field(
        None, description="Discarded if not got within this many milliseconds (at most ten years)."
    )
    format: Annotated[str, Field(max_length=100)] | None = None
    reply_to_queue: Name | None = None
    reply_to_broker: Name | None = None
    report: list[Literal["coa", "cod", "expiry", "exception"]] | None = Field(
        None, description="Reports to send to reply_to_queue."
    )
    properties: dict[str, Any] | None = Field(
        None,
        description=(
            f"At most {MAX_PROPERTIES} properties, each named by 1 to {PROPERTY_KEY_LENGTH} characters; they count "
            "towards the message length."
        ),
        json_schema_extra={
            "maxProperties": MAX_PROPERTIES,
            "propertyNames": {"minLength": 1, "maxLength": PROPERTY_KEY_LENGTH},
        },
    )
    refers_to: RefersTo | None = Field(None, description="A reactive message: acts on an earlier message.")
    dedup_key: Annotated[str, Field(min_length=1, max_length=DEDUP_KEY_LENGTH)] | None = Field(
        None,
        description="Duplicate detection: a put of a key the queue has already taken is skipped "
        "(reported under duplicates), not an error.",
    )
    dedup_retention_ms: Annotated[int, Field(ge=1, le=315_360_000_000)] | None = Field(
        None,
        description="How long the queue remembers dedup_key (at most ten years); absent: until the queue "
        "is deleted. After it, a put of the same key is put again.",
    )

    @model_validator(mode="after")
    def _consistent(self) -> MessageIn:
        if self.body is not None and self.body_base64 is not None:
            raise ValueError("body: Give body or body_base64, not both.")
        if self.body_base64 is not None:
            try:
                base64.b64decode(self.body_base64, validate=True)
            except (binascii.Error, ValueError):
                raise ValueError("body_base64: Must be valid base64.") from None
        if self.report and not self.reply_to_queue:
            raise ValueError("reply_to_queue: Reports need a reply-to queue.")
        if self.dedup_retention_ms is not None and self.dedup_key is None:
            raise ValueError("dedup_retention_ms: A retention needs a dedup_key.")
        if self.properties is not None and (
            len(self.properties) > MAX_PROPERTIES
            or not all(0 < len(key) <= PROPERTY_KEY_LENGTH for key in self.properties)
        ):
            raise ValueError(f"properties: {FIELD_TEXTS['properties']}")
        return self

    def to_input(self) -> MessageInput:
        v = self.__dict__  # the validated fields (about 1 µs a message less than attribute reads)
        if v["body_base64"] is not None:
            body = base64.b64decode(v["body_base64"])
        else:
            body = (v["body"] or "").encode("utf-8", "surrogatepass")
        correl_id, group_id, report, refers_to = v["correl_id"], v["group_id"], v["report"], v["refers_to"]
        return MessageInput(
            body,
            correl_id.lower() if correl_id else None,
            group_id.lower() if group_id else None,
            v["msg_type"] or MessageType.DATAGRAM,
            v["priority"],
            v["persistence"] or "queue_default",
            v["expiry_ms"],
            v["format"] or "",
            v["reply_to_queue"] or "",
            v["reply_to_broker"] or "",
            sorted(set(report)) if report else [],
            v["properties"] or {},
            {"msg_id": refers_to.msg_id.lower(), "action": refers_to.action} if refers_to else None,
            v["dedup_key"],
            v["dedup_retention_ms"],
        )


def message_length(msg: MessageInput) -> int:
    """What a message counts against the message length limits: its body, its properties
    (as compact UTF-8 JSON) and the descriptor fields a client sets freely."""
    length = len(msg.body)
    if msg.properties:
        length += len(
            json.dumps(msg.properties, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "surrogatepass")
        )
    for text in (msg.correl_id, msg.group_id, msg.format, msg.reply_to_queue, msg.reply_to_broker, msg.dedup_key):
        if text:
            length += len(text)
    return length


#: What a reply carries of each message's body (a put's or get's ``bodies``): ``both``
#: (the default) ``body_base64`` always and ``body`` (or null) whenever the bytes are valid
#: UTF-8; ``one`` ``body`` when they are, else ``body_base64``; ``none`` neither.
BODIES = ("both", "one", "none")


def messages_render(messages, *, broker: str, queue: str, bodies: str = "both") -> list[dict[str, Any]]:
    """``message_render`` of each message of one put or get, each time written once: a
    put's messages share their put time (an aware datetime's ``isoformat`` is about a
    third of a message's rendering)."""
    times: dict = {}
    return [message_render(m, broker=broker, queue=queue, bodies=bodies, times=times) for m in messages]


def message_render(
    m: Message, *, broker: str, queue: str, bodies: str = "both", times: dict | None = None
) -> dict[str, Any]:
    """A stored message as clients read it: every descriptor field, and its body as
    ``bodies`` says (``BODIES``): by default ``body_base64`` always and ``body`` whenever
    the bytes are valid UTF-8. ``times``: datetimes already written (``messages_render``)."""
    rendered = _descriptor(m, broker=broker, queue=queue, times={} if times is None else times)
    if bodies == "none":
        return rendered
    body = bytes(m.body)
    try:
        text: str | None = body.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if bodies == "one":
        if text is not None:
            rendered["body"] = text
        else:
            rendered["body_base64"] = base64.b64encode(body).decode("ascii")
        return rendered
    rendered["body"] = text
    rendered["body_base64"] = base64.b64encode(body).decode("ascii")
    return rendered


def iso_once(value, times: dict) -> str | None:
    """``value.isoformat()``, written once per instant and zone in ``times``."""
    if value is None:
        return None
    key = (value, value.tzinfo)  # equal instants in other zones are written differently
    text = times.get(key)
    if text is None:
        text = times[key] = value.isoformat()
    return text


def _descriptor(m: Message, *, broker: str, queue: str, times: dict) -> dict[str, Any]:
    v = m.__dict__  # the row's values: a model field read as an attribute is a class look-up first
    expires_at, locked_until = v["expires_at"], v["locked_until"]
    return {
        "msg_id": v["msg_id"],
        "correl_id": v["correl_id"],
        "group_id": v["group_id"],
        "msg_type": v["msg_type"],
        "priority": v["priority"],
        "persistence": "persistent" if v["persistent"] else "non_persistent",
        "expires_at": None if expires_at is None else iso_once(expires_at, times),
        "expiry_ms": max(0, int((expires_at - timezone.now()).total_seconds() * 1000)) if expires_at else None,
        "format": v["format"] or None,
        "reply_to_queue": v["reply_to_queue"] or None,
        "reply_to_broker": v["reply_to_broker"] or None,
        "report": v["report"] or None,
        "properties": v["properties"] or None,
        "refers_to": None,
        "put_time": iso_once(v["put_time"], times),
        "put_application": v["put_application"] or None,
        "backout_count": v["backout_count"],
        "delivery_count": v["delivery_count"],
        "dead_letter_reason": v["dead_letter_reason"] or None,
        "dead_letter_from": v["dead_letter_queue"] or None,
        "transmission_header": v["transmission_header"],
        "feedback": v["feedback"] or None,
        "lock_token": v["lock_token"],
        "locked_until": None if locked_until is None else iso_once(locked_until, times),
        "queue": queue,
        "broker": broker,
    }

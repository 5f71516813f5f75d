"""Turning a message as a client sends it into a validated :class:`MessageInput`, and a
stored message into what a client reads. Plain functions (not DRF serializers) because
they run once per message on the put and get paths."""
from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass, field
from typing import Any

from django.utils import timezone

from ..exceptions import InvalidInput
from ..models import NAME_PATTERN, Message, MessageType

HEX_ID = re.compile(r"^[0-9a-fA-F]{48}$")
NAME = re.compile(NAME_PATTERN)
REPORT_OPTIONS = {"coa", "cod", "expiry", "exception"}
PERSISTENCE = {"persistent", "non_persistent", "queue_default"}
REACTIVE_ACTIONS = {"cancel", "replace", "reprioritise"}
MESSAGE_FIELDS = {
    "body", "body_base64", "correl_id", "group_id", "msg_type", "priority", "persistence", "expiry_ms",
    "format", "reply_to_queue", "reply_to_broker", "report", "properties", "refers_to", "dedup_key",
}
#: Longest duplicate-detection key.
DEDUP_KEY_LENGTH = 200


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


def _hex_id(value: Any, errors: list[str]) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not HEX_ID.match(value):
        errors.append("Must be 48 hexadecimal characters (24 bytes).")
        return None
    return value.lower()


def message_input_parse(data: Any, *, where: str = "") -> MessageInput:
    """Validate one message as sent by a client. Raises InvalidInput naming every bad field."""
    if not isinstance(data, dict):
        raise InvalidInput("A message must be a JSON object.", errors={where or "message": ["Must be an object."]})
    errors: dict[str, list[str]] = {}

    def err(name: str, text: str) -> None:
        errors.setdefault(f"{where}{name}", []).append(text)

    for name in sorted(set(data) - MESSAGE_FIELDS):
        err(name, "Unknown field.")
    msg = MessageInput()
    if "body" in data and "body_base64" in data and data["body"] is not None and data["body_base64"] is not None:
        err("body", "Give body or body_base64, not both.")
    elif data.get("body_base64") is not None:
        raw = data["body_base64"]
        try:
            msg.body = base64.b64decode(raw, validate=True) if isinstance(raw, str) else None
        except (binascii.Error, ValueError):
            msg.body = None
        if msg.body is None:
            err("body_base64", "Must be valid base64.")
            msg.body = b""
    elif data.get("body") is not None:
        if isinstance(data["body"], str):
            msg.body = data["body"].encode("utf-8")
        else:
            err("body", "Must be a string; send bytes as body_base64.")
    for name in ("correl_id", "group_id"):
        problems: list[str] = []
        setattr(msg, name, _hex_id(data.get(name), problems))
        for p in problems:
            err(name, p)
    if (v := data.get("msg_type")) is not None:
        if isinstance(v, str) and v in MessageType.values:
            msg.msg_type = v
        else:
            err("msg_type", f"Must be one of {', '.join(MessageType.values)}.")
    if (v := data.get("priority")) is not None:
        if isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 9:
            msg.priority = v
        else:
            err("priority", "Must be a whole number from 0 to 9.")
    if (v := data.get("persistence")) is not None:
        if isinstance(v, str) and v in PERSISTENCE:
            msg.persistence = v
        else:
            err("persistence", "Must be persistent, non_persistent or queue_default.")
    if (v := data.get("expiry_ms")) is not None:
        if isinstance(v, int) and not isinstance(v, bool) and v > 0:
            msg.expiry_ms = v
        else:
            err("expiry_ms", "Must be a positive whole number of milliseconds.")
    if (v := data.get("format")) is not None:
        if isinstance(v, str) and len(v) <= 100:
            msg.format = v
        else:
            err("format", "Must be a string of at most 100 characters.")
    for name in ("reply_to_queue", "reply_to_broker"):
        if (v := data.get(name)) is not None:
            if isinstance(v, str) and NAME.match(v):
                setattr(msg, name, v)
            else:
                err(name, "Use 1 to 48 characters of A-Z a-z 0-9 . _ / %.")
    if (v := data.get("report")) is not None:
        if isinstance(v, list) and all(isinstance(x, str) and x in REPORT_OPTIONS for x in v):
            msg.report = sorted(set(v))
        else:
            err("report", "Must be a list drawn from coa, cod, expiry, exception.")
    if msg.report and not msg.reply_to_queue:
        err("reply_to_queue", "Reports need a reply-to queue.")
    if (v := data.get("properties")) is not None:
        if isinstance(v, dict) and all(isinstance(k, str) for k in v):
            msg.properties = v
        else:
            err("properties", "Must be an object.")
    if (v := data.get("refers_to")) is not None:
        if (isinstance(v, dict) and isinstance(v.get("action"), str) and v["action"] in REACTIVE_ACTIONS
                and isinstance(v.get("msg_id"), str)
                and HEX_ID.match(v["msg_id"]) and set(v) <= {"msg_id", "action"}):
            msg.refers_to = {"msg_id": v["msg_id"].lower(), "action": v["action"]}
        else:
            err("refers_to", "Must be {\"msg_id\": <48 hex>, \"action\": cancel|replace|reprioritise}.")
    if (v := data.get("dedup_key")) is not None:
        if isinstance(v, str) and 0 < len(v) <= DEDUP_KEY_LENGTH:
            msg.dedup_key = v
        else:
            err("dedup_key", f"Must be a string of 1 to {DEDUP_KEY_LENGTH} characters.")
    if errors:
        raise InvalidInput("The message is not valid.", errors=errors)
    return msg


def message_render(m: Message, *, broker: str, queue: str) -> dict[str, Any]:
    """A stored message as clients read it: every descriptor field, ``body_base64`` always
    and ``body`` whenever the bytes are valid UTF-8."""
    body = bytes(m.body)
    try:
        text: str | None = body.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    return {
        "msg_id": m.msg_id,
        "correl_id": m.correl_id,
        "group_id": m.group_id,
        "msg_type": m.msg_type,
        "priority": m.priority,
        "persistence": "persistent" if m.persistent else "non_persistent",
        "expires_at": m.expires_at.isoformat() if m.expires_at else None,
        "expiry_ms": max(0, int((m.expires_at - timezone.now()).total_seconds() * 1000)) if m.expires_at else None,
        "format": m.format or None,
        "reply_to_queue": m.reply_to_queue or None,
        "reply_to_broker": m.reply_to_broker or None,
        "report": m.report or None,
        "properties": m.properties or None,
        "refers_to": None,
        "put_time": m.put_time.isoformat(),
        "put_application": m.put_application or None,
        "backout_count": m.backout_count,
        "delivery_count": m.delivery_count,
        "dead_letter_reason": m.dead_letter_reason or None,
        "dead_letter_from": m.dead_letter_queue or None,
        "transmission_header": m.transmission_header,
        "feedback": m.feedback or None,
        "lock_token": m.lock_token,
        "locked_until": m.locked_until.isoformat() if m.locked_until else None,
        "queue": queue,
        "broker": broker,
        "body": text,
        "body_base64": base64.b64encode(body).decode("ascii"),
    }

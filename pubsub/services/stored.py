"""A publication kept in the database (retained, held by conflation, waiting for its unit
of work) and the copies subscribers receive."""

from __future__ import annotations

import dataclasses

from brokers.services.message_input import MessageInput


def message_stored(msg: MessageInput) -> tuple[bytes, dict]:
    """The body and the other fields of a publication, as StoredPublication keeps them."""
    fields = dataclasses.asdict(msg)
    return fields.pop("body"), fields


def message_loaded(body, fields: dict) -> MessageInput:
    return MessageInput(body=bytes(body), **fields)


def message_copy(msg: MessageInput, *, topic: str, subscription: str, is_retained: bool, msg_id: str) -> MessageInput:
    """The copy a subscription's queue receives: the publication with ``topic``,
    ``subscription``, ``is_retained`` and ``publication`` (the publication's msg_id) among
    its properties."""
    properties = {
        **msg.properties,
        "topic": topic,
        "subscription": subscription,
        "is_retained": is_retained,
        "publication": msg_id,
    }
    return dataclasses.replace(msg, properties=properties)

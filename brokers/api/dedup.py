"""How a put answers for messages skipped by duplicate detection (``dedup_key``).

A batch put (``{"messages": [...]}``) answers 201 with the messages it put and
``"duplicates": [{"index", "dedup_key", "msg_id", "duplicate": true}]``: the place of each
skipped message in the request, its key, and the msg_id of the message first put with that
key. A single-message put whose key was taken answers 200 (not 201: nothing was created)
with that same object plus ``transaction``. Like Service Bus and SQS FIFO, a duplicate is
not an error: a client that retries a put it is unsure of gets a success either way.
"""

from __future__ import annotations

from typing import Any

from ..services.messages.common import Duplicate


def duplicate_render(duplicate: Duplicate, **extra: Any) -> dict[str, Any]:
    return {
        "index": duplicate.index,
        "dedup_key": duplicate.dedup_key,
        "msg_id": duplicate.msg_id,
        "duplicate": True,
        **extra,
    }

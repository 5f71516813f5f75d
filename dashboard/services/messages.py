"""The queue page's put and purge, each through the brokers' own services."""

from __future__ import annotations

from django.conf import settings

from brokers.services.message_input import message_input_parse
from brokers.services.messages import message_get, message_put
from config.errors import InvalidInput


def _not_json(name: str):
    raise ValueError(f"{name} is not JSON")


def dashboard_put(
    *,
    broker: str,
    queue: str,
    body: str,
    priority: str = "",
    format: str = "",
    properties: str = "",
    user: str = "",
    actor=None,
) -> str:
    """Put one message outside any unit of work, as typed into the queue page's form.
    Returns the new message's id. ``actor``: the signed-in user, whose rights the brokers'
    rule for indirect paths checks (an alias or remote queue's destination)."""
    import json

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
    result = message_put(
        broker=broker,
        queue=queue,
        messages=[message_input_parse(data)],
        syncpoint="no",
        put_application=f"dashboard:{user}"[:100],
        user=actor,
    )
    return result.messages[0].msg_id


def queue_purge(*, broker: str, queue: str, count: int) -> int:
    """Remove up to ``count`` available messages (the number the operator confirmed), by
    final gets in delivery order, so counters, reports and the journal stay as for any get.
    Messages under a unit of work or locked are left alone. Returns how many were removed.
    ``count`` is 0 or more (the purge form's view checked it)."""
    removed = 0
    while removed < count:
        result = message_get(broker=broker, queue=queue, batch=min(count - removed, settings.BATON_MAX_BATCH))
        if not result.messages:
            break
        removed += len(result.messages)
    return removed

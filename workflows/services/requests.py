"""Step and compensation requests: ordinary messages put with the ordinary put
(``message_put``, so its checks apply), carrying ``workflow: {"instance", "workflow",
"step", "compensation"}`` among their properties, and followed in ``StepRequest``.

A request's ``correl_id`` is the instance's id unless the caller gave one: a join step's
worker takes its other inputs with a get by that correlation id (and ``properties.workflow
.inputs`` says how many there are)."""

from __future__ import annotations

import dataclasses
from typing import Any

from django.utils import timezone

from brokers.services.message_input import MessageInput
from brokers.services.messages import message_put
from transactions import queries as txn_queries

from ..models import Instance

#: The note of a request put (``StepRequest``): nothing reads it before the step's commit.
_INSERT = (
    "INSERT INTO workflows_steprequest "
    '(instance_id, step, compensation, msg_id, queue, source, put_transaction, "open", put_at) '
    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)"
)

#: put_application of every request Baton puts for a workflow.
PUT_APPLICATION = "workflows"


def message_fields(msg: MessageInput | None) -> dict[str, Any]:
    """A message's fields as JSON, as a step's compensation input is recorded."""
    fields = dataclasses.asdict(msg or MessageInput())
    fields["body"] = bytes(fields["body"]).decode("latin-1")
    return fields


def message_from_fields(fields: dict[str, Any] | None) -> MessageInput:
    values = dict(fields or {})
    values["body"] = str(values.get("body", "")).encode("latin-1")
    known = {f.name for f in dataclasses.fields(MessageInput)}
    return MessageInput(**{k: v for k, v in values.items() if k in known})


def request_put(
    *,
    instance: Instance,
    workflow_name: str,
    step: str,
    queue: str,
    message: MessageInput | None,
    compensation: bool = False,
    transaction_id: str | None = None,
    source: str = "",
    inputs: int = 1,
    user=None,
) -> None:
    """Put a step's (or a compensation's) request under ``transaction_id`` (or at once) and
    note it (``StepRequest``). Caller holds an open database transaction."""
    msg = message or MessageInput()
    tag = {"instance": instance.pk, "workflow": workflow_name, "step": step, "compensation": compensation}
    if inputs > 1:
        tag["inputs"] = inputs
    msg = dataclasses.replace(
        msg,
        properties={**msg.properties, "workflow": tag},
        correl_id=msg.correl_id or instance.pk,
        refers_to=None,
        dedup_key=None,
    )
    txn_queries.deferred_flush()  # the caller's deferred writes must not ride in the put's savepoint
    result = message_put(
        broker=instance.broker.name,
        queue=queue,
        messages=[msg],
        transaction_id=transaction_id,
        put_application=PUT_APPLICATION,
        user=user,
    )
    txn_queries.deferred(
        _INSERT,
        [
            instance.pk,
            step,
            compensation,
            result.messages[0].msg_id,
            queue,
            source,
            transaction_id or "",
            True,
            txn_queries.dt_param(timezone.now()),
        ],
    )

"""Step and compensation requests: ordinary messages put with the ordinary put
(``message_put``, so its checks apply), carrying ``workflow: {"instance", "workflow",
"step", "compensation"}`` among their properties, and followed in ``StepRequest``.

A request's ``correl_id`` is the instance's id unless the caller gave one: a join step's
worker takes its other inputs with a get by that correlation id (and ``properties.workflow
.inputs`` says how many there are)."""

from __future__ import annotations

import dataclasses
from typing import Any

from django.conf import settings
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


@dataclasses.dataclass(frozen=True)
class Request:
    """A step's (or a compensation's) request to put (``requests_put``): ``message`` on
    ``queue`` for ``step`` of ``instance``; ``source``: the step whose completion puts it;
    ``inputs``: how many requests the step takes (a join step: one per predecessor)."""

    instance: Instance
    workflow_name: str
    step: str
    queue: str
    message: MessageInput | None
    compensation: bool = False
    source: str = ""
    inputs: int = 1


def request_put(*, transaction_id: str | None = None, user=None, **request: Any) -> None:
    """``requests_put`` of one ``Request`` (its fields as keywords)."""
    requests_put(requests=[Request(**request)], transaction_id=transaction_id, user=user)


def requests_put(*, requests: list[Request], transaction_id: str | None = None, user=None) -> None:
    """Put the requests under ``transaction_id`` (or at once) and note each (``StepRequest``):
    one ``message_put`` per queue (a worker's batch of completions of one step puts its
    successors' requests in one call), the queues in (broker, name) order, at most
    BATON_MAX_BATCH messages a call. Caller holds an open database transaction and the
    instances' rows."""
    groups: dict[tuple[str, str], list[Request]] = {}
    for r in requests:
        groups.setdefault((r.instance.broker.name, r.queue), []).append(r)
    most = settings.BATON_MAX_BATCH
    txn_queries.deferred_flush()  # the caller's deferred writes must not ride in the put's savepoint
    for (broker, queue), group in sorted(groups.items()):
        for chunk in (group[i : i + most] for i in range(0, len(group), most)):
            result = message_put(
                broker=broker,
                queue=queue,
                messages=[_tagged(r) for r in chunk],
                transaction_id=transaction_id,
                put_application=PUT_APPLICATION,
                user=user,
            )
            at, put_transaction = txn_queries.dt_param(timezone.now()), transaction_id or ""
            for r, put in zip(chunk, result.messages):
                note = [r.instance.pk, r.step, r.compensation, put.msg_id, queue, r.source, put_transaction, True, at]
                txn_queries.deferred(_INSERT, note)


def _tagged(r: Request) -> MessageInput:
    """The request's message with ``workflow`` among its properties and the instance's id as
    its correlation id unless it has one."""
    msg = r.message or MessageInput()
    tag = {"instance": r.instance.pk, "workflow": r.workflow_name, "step": r.step, "compensation": r.compensation}
    if r.inputs > 1:
        tag["inputs"] = r.inputs
    return dataclasses.replace(
        msg,
        properties={**msg.properties, "workflow": tag},
        correl_id=msg.correl_id or r.instance.pk,
        refers_to=None,
        dedup_key=None,
    )

"""What the workflow commands share: ``--step`` parsing, and a manual step done by a
person (the command gets the instance's request from the step's queue under a unit of
work it begins, completes or fails the step in it, and commits)."""

from __future__ import annotations

import argparse
from typing import Callable

from django.conf import settings

from brokers.api.operations.base import given
from brokers.api.operations.messages import MessageGet
from brokers.services.message_input import MessageInput
from brokers.services.messages import message_get
from transactions.manager import transaction_begin, transaction_commit, transaction_rollback
from baton_client.errors import WorkflowConflict
from workflows.selectors import instance_get


def step_spec(text: str) -> dict:
    """``name:queue:compensation_queue[:next,next]`` (an empty next, ``name:q:cq:``, ends the branch)."""
    parts = text.split(":")
    if len(parts) not in (3, 4) or not all(parts[:3]):
        raise argparse.ArgumentTypeError(f"expected name:queue:compensation_queue[:next,...], not {text!r}")
    step = {"name": parts[0], "queue": parts[1], "compensation_queue": parts[2]}
    if len(parts) == 4:
        step["next"] = [n for n in parts[3].split(",") if n]
    return step


def step_options_add(parser, *, required: bool) -> None:
    parser.add_argument(
        "--step",
        dest="steps",
        action="append",
        type=step_spec,
        required=required,
        metavar="NAME:QUEUE:COMP_QUEUE[:NEXT,...]",
        help="a step, in order (repeat the option); NEXT lists the steps that follow it",
    )
    parser.add_argument(
        "--deadline-ms", type=int, help="fail an instance with no step committed for this long (0: no deadline)"
    )
    parser.add_argument("--description", help="what the workflow does")


def manual_step(*, instance_id: str, step: str, act: Callable[[str, list], None], wait: float = 0) -> str:
    """Get the instance's request(s) for ``step`` under a new unit of work,
    ``act(transaction, requests)`` and commit (roll back if ``act`` fails). Returns the unit
    of work's id."""
    instance = instance_get(instance_id=instance_id)
    definition = instance.version.steps.filter(name=step).first()
    queue = definition.queue if definition is not None else ""
    if definition is not None:  # the wait comes from the command line: checked as REST checks a get's
        request = MessageGet.parse(
            {
                "broker": instance.broker.name,
                "queue": queue,
                "correl_id": instance.pk,
                "batch": min(100, settings.BATON_MAX_BATCH),
                "wait": wait,
            }
        )
    txn = transaction_begin(broker=instance.broker.name, timeout_ms=instance.broker.transaction_timeout_ms).id
    got = []
    try:
        if definition is not None:
            got = message_get(
                broker=request.broker, queue=request.queue, transaction_id=txn, **given(request, "broker", "queue")
            ).messages
            if not got:
                raise WorkflowConflict(
                    f"No request of instance {instance.pk} for step {step!r} is waiting on queue {queue!r}.",
                    instance=instance.pk,
                    step=step,
                )
        act(txn, got)
    except BaseException:
        transaction_rollback(transaction_id=txn, require_open=False)
        raise
    transaction_commit(transaction_id=txn)
    return txn


def message(text: str | None) -> MessageInput | None:
    return None if text is None else MessageInput(body=text.encode())


def passed_on(requests: list) -> MessageInput | None:
    """The step's request as the next step's: its body and format (the claim goes on)."""
    if not requests:
        return None
    first = requests[0]
    return MessageInput(body=bytes(first.body), format=first.format or "")

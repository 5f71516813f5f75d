"""The expense-claim workflow, with its workers, against a running Baton platform.

    submit → validate → manager approval (a person) → authorize payment → deposit → e-mail

Each step is a request on the queue of the service that does it; each worker takes a
request under a unit of work, does its work and completes the step in that same unit of
work with its output (the next step's request) and its compensation input (what undoing it
needs), then commits. Should a claim fail or be aborted, Baton sends a compensation request
for each committed step, newest first, and the workers below undo them.

    python examples/expense_claims.py --url http://127.0.0.1:8000 --token KEY setup
    python examples/expense_claims.py ... submit "Conference hotel" 412.50   # prints the instance id
    python examples/expense_claims.py ... work --once         # the automatic workers
    python manage.py complete_step <instance> approve --output approved --compensation "withdraw approval"
    python manage.py fail_step <instance> approve --reason "no receipt"     # or reject it
    python examples/expense_claims.py ... work --once
    python manage.py display_instance <instance>

Only the Python client (baton_client) is needed: the workers use ordinary gets, units of
work and the workflow operations over one session.
"""

from __future__ import annotations

import argparse
import json
import sys

from baton_client import Client
from baton_client.errors import AlreadyExists, WorkflowConflict

BROKER = "EXPENSES"
WORKFLOW = "expense_claim"
#: step → (queue, compensation queue); approve is done by a person
STEPS = {
    "validate": ("CLAIMS.VALIDATE", "CLAIMS.VALIDATE.UNDO"),
    "approve": ("CLAIMS.APPROVE", "CLAIMS.APPROVE.UNDO"),
    "authorize": ("PAYMENTS.AUTHORIZE", "PAYMENTS.AUTHORIZE.UNDO"),
    "deposit": ("PAYMENTS.DEPOSIT", "PAYMENTS.DEPOSIT.UNDO"),
    "notify": ("MAIL.NOTIFY", "MAIL.NOTIFY.UNDO"),
}
LIMIT = 1000.0  # claims above this fail validation


def setup(client: Client) -> None:
    """The broker, its queues (backout threshold 3: a request that keeps failing fails the
    claim) and the workflow. Running it again changes nothing."""
    try:
        client.define_broker(BROKER, transaction_timeout_ms=60_000)
    except AlreadyExists:
        pass
    for queue, undo in STEPS.values():
        for name in (queue, undo):
            try:
                client.define_queue(BROKER, name, backout_threshold=3)
            except AlreadyExists:
                pass
    try:
        client.define_workflow(
            BROKER,
            WORKFLOW,
            [{"name": step, "queue": queue, "compensation_queue": undo} for step, (queue, undo) in STEPS.items()],
            deadline_ms=86_400_000,
            description="Submit, validate, approve, authorize, deposit, notify",
        )
    except AlreadyExists:
        pass


def submit(client: Client, description: str, amount: float) -> str:
    claim = {"description": description, "amount": amount}
    return client.start_workflow(BROKER, WORKFLOW, json.dumps(claim), format="application/json")["id"]


def _claim(message) -> dict:
    return json.loads(message.text)


def _do(claim: dict, step: str) -> tuple[dict, dict | None]:
    """What each automatic service does: (output, compensation input); a ValueError fails the claim."""
    if step == "validate":
        if claim["amount"] <= 0 or claim["amount"] > LIMIT:
            raise ValueError(f"amount {claim['amount']} is outside 0..{LIMIT}")
        return {**claim, "validated": True}, {"undo": "validate"}
    if step == "authorize":
        return {**claim, "authorization": f"AUTH-{abs(hash(claim['description'])) % 10**6:06d}"}, {
            "void": f"AUTH for {claim['amount']}"
        }
    if step == "deposit":
        return {**claim, "deposited": claim["amount"]}, {"reverse_deposit": claim["amount"]}
    if step == "notify":
        return {**claim, "mailed": True}, {"send": "correction e-mail"}
    raise AssertionError(step)


def work_step(client: Client, step: str, *, wait: float = 0) -> bool:
    """One request of an automatic step: get it under a unit of work, do the work, complete
    (or fail) the step in that unit of work, commit. Returns whether there was one."""
    queue, _ = STEPS[step]
    with client.transaction(BROKER) as txn:
        request = txn.get(queue, wait=wait)
        if request is None:
            return False
        tag = request.properties["workflow"]
        try:
            output, compensation = _do(_claim(request), step)
        except ValueError as exc:
            client.fail_step(tag["instance"], step, str(exc), transaction=txn)
            return True
        try:
            client.complete_step(
                tag["instance"], step, txn, output=json.dumps(output), compensation=json.dumps(compensation)
            )
        except WorkflowConflict:
            pass  # the claim was aborted meanwhile: the request is consumed, nothing is done
    return True


def undo_step(client: Client, step: str, *, wait: float = 0) -> bool:
    """One compensation request: undo what the step did (from the input it recorded), report
    it done in the same unit of work, commit."""
    _, undo = STEPS[step]
    with client.transaction(BROKER) as txn:
        request = txn.get(undo, wait=wait)
        if request is None:
            return False
        tag = request.properties["workflow"]
        print(f"compensating {step} of {tag['instance'][:12]}…: {request.text}")
        client.step_compensated(tag["instance"], step, txn)
    return True


def work(client: Client, *, once: bool) -> None:
    """The automatic workers (not approve: a person does that), until idle if ``once``."""
    while True:
        busy = False
        for step in STEPS:
            if step != "approve":
                while work_step(client, step):
                    busy = True
            while undo_step(client, step):
                busy = True
        if once and not busy:
            return
        if not busy:
            work_step(client, "validate", wait=5)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--token", required=True)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("setup")
    p = sub.add_parser("submit")
    p.add_argument("description")
    p.add_argument("amount", type=float)
    p = sub.add_parser("work")
    p.add_argument("--once", action="store_true", help="stop when there is nothing left to do")
    args = parser.parse_args(argv)
    with Client(args.url, args.token) as client:
        if args.command == "setup":
            setup(client)
        elif args.command == "submit":
            print(submit(client, args.description, args.amount))
        else:
            work(client, once=args.once)


if __name__ == "__main__":
    sys.exit(main())

"""An order saga served by step workers of the Python client (``baton_client.StepWorker``).

    reserve stock → charge the card → ship

Each step is a plain function: it gets the step's request, returns the next step's request
and what undoing the step needs; the worker completes the step and commits in one call. A
compensation function per step undoes it, should the order fail (a card declined: the
charge raises ``StepFailed``) or be aborted. An exception of any other kind is retried, and a
request that keeps failing fails the order once its queue's backout threshold (3) is reached.

    python examples/order_saga.py --url http://127.0.0.1:8000 --token KEY setup
    python examples/order_saga.py ... submit widget 3 120.00      # prints the instance id
    python examples/order_saga.py ... submit widget 1 9999.00     # declined: compensated
    python examples/order_saga.py ... serve                       # until Ctrl-C

Shipped orders are announced on ``ORDERS.SHIPPED`` and cancelled ones on
``ORDERS.CANCELLED`` (each put in the unit of work of the step or compensation that decides
it, so it is there exactly when that commits). Only ``baton_client`` is needed.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys

from baton_client import Client, Output, StepFailed, StepRequest, StepWorker
from baton_client.errors import AlreadyExists

BROKER = "SHOP"
WORKFLOW = "order"
STEPS = ["reserve", "charge", "ship"]
CARD_LIMIT = 1000.0


def setup(client: Client) -> None:
    """The broker, a queue and a compensation queue per step, the announcement queues and the
    workflow. Running it again changes nothing."""
    try:
        client.define_broker(BROKER, transaction_timeout_ms=60_000)
    except AlreadyExists:
        pass
    queues = [f"ORDERS.{s.upper()}" for s in STEPS] + [f"ORDERS.{s.upper()}.UNDO" for s in STEPS]
    for name in [*queues, "ORDERS.SHIPPED", "ORDERS.CANCELLED", "ORDERS.BACKOUT"]:
        try:
            client.define_queue(BROKER, name, backout_threshold=3, backout_queue="ORDERS.BACKOUT")
        except AlreadyExists:
            pass
    try:
        client.define_workflow(
            BROKER,
            WORKFLOW,
            [
                {"name": s, "queue": f"ORDERS.{s.upper()}", "compensation_queue": f"ORDERS.{s.upper()}.UNDO"}
                for s in STEPS
            ],
        )
    except AlreadyExists:
        pass


def submit(client: Client, item: str, quantity: int, amount: float) -> str:
    order = {"item": item, "quantity": quantity, "amount": amount}
    return client.start_workflow(BROKER, WORKFLOW, json.dumps(order))["id"]


def worker(client: Client, **options) -> StepWorker:
    """The order's workers: a function per step and per compensation."""
    w = StepWorker(client, broker=BROKER, workflow=WORKFLOW, **options)

    @w.step("reserve")
    def reserve(request: StepRequest) -> Output:
        order = request.json()
        reservation = f"R-{request.instance[:8]}"
        return Output(
            output=json.dumps({**order, "reservation": reservation}),
            compensation=json.dumps({"release": reservation, "quantity": order["quantity"]}),
        )

    @w.step("charge")
    def charge(request: StepRequest) -> Output:
        order = request.json()
        if order["amount"] > CARD_LIMIT:
            raise StepFailed(f"card declined: {order['amount']:.2f} is over the limit")
        payment = f"P-{request.instance[:8]}"
        return Output(
            output=json.dumps({**order, "payment": payment}),
            compensation=json.dumps({"refund": payment, "amount": order["amount"]}),
        )

    @w.step("ship")
    def ship(request: StepRequest) -> Output:
        order = request.json()
        client.put(BROKER, "ORDERS.SHIPPED", request.instance, transaction=request.transaction)
        return Output(compensation=json.dumps({"recall": order["reservation"]}))

    @w.compensation("charge")
    def refund(request: StepRequest) -> None:
        print(f"refunding {request.text}")

    @w.compensation("reserve")
    def release(request: StepRequest) -> None:
        print(f"releasing {request.text}")
        client.put(BROKER, "ORDERS.CANCELLED", request.instance, transaction=request.transaction)

    @w.compensation("ship")
    def recall(request: StepRequest) -> None:
        print(f"recalling {request.text}")

    return w


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--token", required=True)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("setup")
    p = sub.add_parser("submit")
    p.add_argument("item")
    p.add_argument("quantity", type=int)
    p.add_argument("amount", type=float)
    p = sub.add_parser("serve")
    p.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    with Client(args.url, args.token) as client:
        if args.command == "setup":
            setup(client)
        elif args.command == "submit":
            print(submit(client, args.item, args.quantity, args.amount))
        else:
            w = worker(client, threads=args.threads)
            signal.signal(signal.SIGTERM, lambda *_: w.stop())
            try:
                w.run()
            except KeyboardInterrupt:
                w.stop()


if __name__ == "__main__":
    sys.exit(main())

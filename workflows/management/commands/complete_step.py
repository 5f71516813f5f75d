from django.core.management.base import BaseCommand

from brokers.management.admin_cli import service_errors
from workflows.management.cli import manual_step, message, passed_on
from workflows.services.instances import step_complete


class Command(BaseCommand):
    help = (
        "Do a step by hand (a manual approval): get the instance's request from the step's queue under a "
        "unit of work, complete the step with OUTPUT as the next step's request and COMPENSATION as its "
        "compensation input, and commit."
    )

    def add_arguments(self, parser):
        parser.add_argument("instance")
        parser.add_argument("step")
        parser.add_argument("--output", help="the next step(s)' request body (default: the step's request, passed on)")
        parser.add_argument("--compensation", help="this step's compensation request body")
        parser.add_argument("--wait", type=float, default=0, help="seconds to wait for the request")

    def handle(self, *args, instance, step, output, compensation, wait, **options):
        with service_errors():
            txn = manual_step(
                instance_id=instance,
                step=step,
                wait=wait,
                act=lambda t, requests: step_complete(
                    instance_id=instance,
                    step=step,
                    transaction_id=t,
                    output=message(output) if output is not None else passed_on(requests),
                    compensation=message(compensation),
                ),
            )
        if options["verbosity"] > 0:
            self.stdout.write(f"Step {step!r} of instance {instance} committed (unit of work {txn}).")

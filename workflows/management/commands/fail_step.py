from django.core.management.base import BaseCommand

from brokers.management.admin_cli import service_errors
from workflows.management.cli import manual_step
from workflows.services.instances import step_fail


class Command(BaseCommand):
    help = (
        "Refuse a step by hand (a manual rejection): get the instance's request from the step's queue under "
        "a unit of work, fail the step in it with REASON, and commit: compensation begins."
    )

    def add_arguments(self, parser):
        parser.add_argument("instance")
        parser.add_argument("step")
        parser.add_argument("--reason", default="rejected")
        parser.add_argument("--wait", type=float, default=0)

    def handle(self, *args, instance, step, reason, wait, **options):
        with service_errors():
            manual_step(
                instance_id=instance,
                step=step,
                wait=wait,
                act=lambda t, requests: step_fail(instance_id=instance, step=step, reason=reason, transaction_id=t),
            )
        if options["verbosity"] > 0:
            self.stdout.write(f"Step {step!r} of instance {instance} failed: {reason}.")

from django.core.management.base import BaseCommand

from brokers.management.admin_cli import service_errors
from workflows.services.instances import workflow_abort


class Command(BaseCommand):
    help = "Abort a running workflow instance: its steps in flight back out, its committed steps are compensated."

    def add_arguments(self, parser):
        parser.add_argument("instance")
        parser.add_argument("--reason", default="aborted")

    def handle(self, *args, instance, reason, **options):
        with service_errors():
            result = workflow_abort(instance_id=instance, reason=reason)
        if options["verbosity"] > 0:
            self.stdout.write(f"Instance {instance} is {result.state}.")

from django.core.management.base import BaseCommand

from brokers.management.admin_cli import service_errors
from workflows.services.instances import compensation_resubmit


class Command(BaseCommand):
    help = "Put a failed compensation's request again (an instance in compensation_failed)."

    def add_arguments(self, parser):
        parser.add_argument("instance")

    def handle(self, *args, instance, **options):
        with service_errors():
            result = compensation_resubmit(instance_id=instance)
        if options["verbosity"] > 0:
            self.stdout.write(f"Instance {instance} is {result.state}.")

from django.core.management.base import BaseCommand

from brokers.management.admin_cli import service_errors
from workflows.services.definitions import workflow_delete


class Command(BaseCommand):
    help = "Delete a workflow with its ended instances (refused while an instance has not ended)."

    def add_arguments(self, parser):
        parser.add_argument("broker")
        parser.add_argument("name")

    def handle(self, *args, broker, name, **options):
        with service_errors():
            workflow_delete(broker=broker, name=name)
        if options["verbosity"] > 0:
            self.stdout.write(f"Workflow {name!r} deleted from broker {broker!r}.")

from django.core.management.base import BaseCommand

from brokers.management.admin_cli import service_errors
from workflows.management.cli import step_options_add
from workflows.services.definitions import workflow_define


class Command(BaseCommand):
    help = (
        "Define a workflow on a broker: its steps in order, each a request on a queue with a compensation "
        "queue (e.g. --step validate:VALIDATE:UNVALIDATE --step approve:APPROVE:UNAPPROVE)."
    )

    def add_arguments(self, parser):
        parser.add_argument("broker", help="the broker the workflow belongs to")
        parser.add_argument("name", help="the workflow's name")
        step_options_add(parser, required=True)

    def handle(self, *args, broker, name, steps, deadline_ms, description, **options):
        with service_errors():
            workflow_define(
                broker=broker, name=name, steps=steps, deadline_ms=deadline_ms or 0, description=description or ""
            )
        if options["verbosity"] > 0:
            self.stdout.write(f"Workflow {name!r} ({len(steps)} steps) defined on broker {broker!r}.")

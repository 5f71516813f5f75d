from django.core.management.base import BaseCommand

from brokers.management.admin_cli import service_errors
from workflows.management.cli import step_options_add
from brokers.api.operations.base import given
from workflows.api.operations import WorkflowAlter, step_dicts
from workflows.services.definitions import workflow_alter


class Command(BaseCommand):
    help = "Alter a workflow: a new version (running instances keep theirs). Steps given replace them all."

    def add_arguments(self, parser):
        parser.add_argument("broker")
        parser.add_argument("name")
        step_options_add(parser, required=False)

    def handle(self, *args, broker, name, steps, deadline_ms, description, **options):
        changes = {
            k: v
            for k, v in {"steps": steps, "deadline_ms": deadline_ms, "description": description}.items()
            if v is not None
        }
        with service_errors():
            data = WorkflowAlter.parse({"broker": broker, "name": name, **changes})
            parsed = given(data, "broker", "name")
            if data.steps is not None:
                parsed["steps"] = step_dicts(data.steps)
            workflow = workflow_alter(broker=data.broker, name=data.name, **parsed)
        if options["verbosity"] > 0:
            self.stdout.write(f"Workflow {name!r} is now at version {workflow.version}.")

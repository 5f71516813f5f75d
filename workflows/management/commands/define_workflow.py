from django.core.management.base import BaseCommand

from brokers.management.admin_cli import service_errors
from workflows.management.cli import step_options_add
from workflows.api.operations import WorkflowDefine, step_dicts
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
            given = {"deadline_ms": deadline_ms, "description": description}
            data = WorkflowDefine.parse(
                {"broker": broker, "name": name, "steps": steps, **{k: v for k, v in given.items() if v is not None}}
            )
            workflow_define(
                broker=data.broker,
                name=data.name,
                steps=step_dicts(data.steps),
                deadline_ms=data.deadline_ms,
                description=data.description,
            )
        if options["verbosity"] > 0:
            self.stdout.write(f"Workflow {name!r} ({len(steps)} steps) defined on broker {broker!r}.")

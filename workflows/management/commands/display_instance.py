from django.core.management.base import BaseCommand

from brokers.management.admin_cli import json_dumps, service_errors, table
from workflows.selectors import instance_get, instance_summary, instance_view, instances_find

STEPS = [
    ("STEP", "name"),
    ("STATE", "state"),
    ("TRANSACTION", "transaction"),
    ("COMMITTED_AT", "committed_at"),
    ("COMPENSATED_AT", "compensated_at"),
]
INSTANCES = [
    ("ID", "id"),
    ("WORKFLOW", "workflow"),
    ("VERSION", "version"),
    ("STATE", "state"),
    ("STARTED_AT", "started_at"),
    ("REASON", "reason"),
]


class Command(BaseCommand):
    help = (
        "Display a workflow instance (its steps and history), or find instances: BROKER --workflow NAME "
        "[--state S] [--step STEP] [--older-than-ms N]."
    )

    def add_arguments(self, parser):
        parser.add_argument("target", metavar="ID|BROKER", help="an instance id, or a broker to find instances on")
        parser.add_argument("--workflow", help="find this workflow's instances")
        parser.add_argument("--state")
        parser.add_argument("--step")
        parser.add_argument("--older-than-ms", type=int)
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, target, workflow, state, step, older_than_ms, json, **options):
        with service_errors():
            if workflow:
                _, rows = instances_find(
                    broker=target, name=workflow, state=state, step=step, older_than_ms=older_than_ms, limit=1000
                )
                rendered = [instance_summary(i) for i in rows]
                self.stdout.write(json_dumps(rendered, indent=2) if json else table(rendered, INSTANCES))
                return
            view = instance_view(instance_get(instance_id=target))
        if json:
            self.stdout.write(json_dumps(view, indent=2))
            return
        self.stdout.write(
            f"{view['id']}  {view['workflow']} v{view['version']}  {view['state']}"
            + (f"  ({view['reason']})" if view["reason"] else "")
        )
        self.stdout.write(table(view["steps"], STEPS))
        for h in view["history"]:
            self.stdout.write(f"  {h['at']}  {h['event']}  {h['step'] or ''}  {h['detail'] or ''}".rstrip())

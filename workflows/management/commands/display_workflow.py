from django.core.management.base import BaseCommand

from brokers.management.admin_cli import is_generic, json_dumps, name_matches, service_errors, table
from workflows.selectors import workflow_get, workflow_list, workflow_view

COLUMNS = [
    ("NAME", "name"),
    ("VERSION", "version"),
    ("STEPS", "steps"),
    ("DEADLINE_MS", "deadline_ms"),
    ("RUNNING", "running"),
    ("COMPLETED", "completed"),
    ("COMPENSATING", "compensating"),
    ("COMPENSATED", "compensated"),
    ("COMP_FAILED", "compensation_failed"),
]


class Command(BaseCommand):
    help = (
        "Display the workflows of a broker with their instances by state. An exact NAME shows its steps, one per line."
    )

    def add_arguments(self, parser):
        parser.add_argument("broker")
        parser.add_argument("name", nargs="?", default=None, metavar="NAME|*")
        parser.add_argument("--json", action="store_true", help="print JSON")

    def handle(self, *args, broker, name, json, **options):
        with service_errors():
            workflows = (
                [w for w in workflow_list(broker=broker) if name_matches(name, w.name)]
                if is_generic(name)
                else [workflow_get(broker=broker, name=name)]
            )
            rendered = [workflow_view(w) for w in workflows]
        if json:
            self.stdout.write(json_dumps(rendered, indent=2))
        elif not is_generic(name):
            data = rendered[0]
            self.stdout.write(f"{data['name']} version {data['version']}, deadline_ms {data['deadline_ms']}")
            for step in data["steps"]:
                self.stdout.write(
                    f"  {step['name']}: {step['queue']} (compensation {step['compensation_queue']})"
                    f" -> {', '.join(step['next']) or 'end'}"
                )
        else:
            self.stdout.write(table([{**d, "steps": len(d["steps"]), **d["instances"]} for d in rendered], COLUMNS))

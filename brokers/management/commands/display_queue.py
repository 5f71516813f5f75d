from django.core.management.base import BaseCommand

from brokers.api.render import queue_render
from brokers.management.admin_cli import (
    attributes_listing,
    is_generic,
    json_dumps,
    name_matches,
    service_errors,
    table,
)
from brokers.models import QueueKind
from brokers.selectors import queue_depths, queue_get, queue_list

COLUMNS = [
    ("NAME", "name"),
    ("KIND", "kind"),
    ("USAGE", "usage"),
    ("DEPTH", "depth"),
    ("UNCOMMITTED", "uncommitted_puts"),
    ("IN_FLIGHT", "in_flight"),
    ("LOCKED", "locked"),
    ("MAX_DEPTH", "max_depth"),
    ("PUT", "put_enabled"),
    ("GET", "get_enabled"),
    ("TARGET", "target"),
    ("DESCRIPTION", "description"),
]


def _target(data: dict) -> str:
    if data["kind"] == QueueKind.ALIAS:
        return data["target_queue"]
    if data["kind"] == QueueKind.REMOTE:
        return f"{data['remote_queue']}@{data['remote_broker']} via {data['transmission_queue']}"
    return ""


class Command(BaseCommand):
    help = (
        "Display the queues of a broker with their depths (committed messages), uncommitted puts, "
        "messages in flight and locked messages. An exact NAME shows every attribute of that queue, "
        "one per line; a generic name (*, APP.*) or none shows a table of the queues it matches."
    )

    def add_arguments(self, parser):
        parser.add_argument("broker", help="the broker whose queues to show")
        parser.add_argument(
            "name",
            nargs="?",
            default=None,
            metavar="NAME|*",
            help="a queue name, or a generic name with * (default: all)",
        )
        parser.add_argument("--json", action="store_true", help="print a JSON array of the queues")

    def handle(self, *args, broker, name, json, **options):
        with service_errors():
            if is_generic(name):
                queues = [q for q in queue_list(broker=broker) if name_matches(name, q.name)]
            else:
                queues = [queue_get(broker=broker, name=name)]
            depths = queue_depths(queue_ids=[q.pk for q in queues])
        rendered = [queue_render(q, depths[q.pk]) for q in queues]
        if json:
            self.stdout.write(json_dumps(rendered, indent=2))
        elif not is_generic(name):
            self.stdout.write(attributes_listing(rendered[0]))
        elif rendered:
            self.stdout.write(table([{**data, "target": _target(data)} for data in rendered], COLUMNS))
        else:
            self.stderr.write(
                f"No queue on broker {broker!r} matches {name!r}." if name else f"Broker {broker!r} has no queues."
            )

from django.core.management.base import BaseCommand

from brokers.api.render import broker_render
from brokers.management.admin_cli import (
    attributes_listing,
    is_generic,
    json_dumps,
    name_matches,
    service_errors,
    table,
)
from brokers.selectors import broker_get, broker_list

COLUMNS = [
    ("NAME", "name"),
    ("DEAD_LETTER_QUEUE", "dead_letter_queue"),
    ("TXN_TIMEOUT_MS", "transaction_timeout_ms"),
    ("MAX_MSG_LENGTH", "max_message_length"),
    ("PERSISTENCE", "default_persistence"),
    ("DESCRIPTION", "description"),
]


class Command(BaseCommand):
    help = (
        "Display brokers. An exact NAME shows every attribute of that broker, one per line; "
        "a generic name (*, QM*) or none shows a table of the brokers it matches."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "name",
            nargs="?",
            default=None,
            metavar="NAME|*",
            help="a broker name, or a generic name with * (default: all)",
        )
        parser.add_argument("--json", action="store_true", help="print a JSON array of the brokers")

    def handle(self, *args, name, json, **options):
        with service_errors():
            if is_generic(name):
                brokers = [broker_render(b) for b in broker_list() if name_matches(name, b.name)]
            else:
                brokers = [broker_render(broker_get(name=name))]
        if json:
            self.stdout.write(json_dumps(brokers, indent=2))
        elif not is_generic(name):
            self.stdout.write(attributes_listing(brokers[0]))
        elif brokers:
            self.stdout.write(table(brokers, COLUMNS))
        else:
            self.stderr.write(f"No broker matches {name!r}." if name else "No brokers are defined.")

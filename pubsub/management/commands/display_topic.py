from django.core.management.base import BaseCommand

from brokers.management.admin_cli import attributes_listing, is_generic, json_dumps, name_matches, service_errors, table
from pubsub.api.render import topic_render
from pubsub.selectors import topic_get, topic_list

COLUMNS = [
    ("NAME", "name"),
    ("TOPIC_STRING", "topic_string"),
    ("CONFLATION_MS", "conflation_interval_ms"),
    ("DURABLE_SUBS", "durable_subscriptions"),
    ("DESCRIPTION", "description"),
]


class Command(BaseCommand):
    help = (
        "Display topic objects. An exact NAME shows every attribute, one per line; a generic name "
        "(*, PRICES.*) or none shows a table."
    )

    def add_arguments(self, parser):
        parser.add_argument("broker", help="the broker")
        parser.add_argument("name", nargs="?", default=None, metavar="NAME|*", help="a topic object or a generic name")
        parser.add_argument("--json", action="store_true", help="print a JSON array")

    def handle(self, *args, broker, name, json, **options):
        with service_errors():
            if is_generic(name):
                topics = [t for t in topic_list(broker=broker) if name_matches(name, t.name)]
            else:
                topics = [topic_get(broker=broker, name=name)]
        rendered = [topic_render(row) for row in topics]
        if json:
            self.stdout.write(json_dumps(rendered, indent=2))
        elif not is_generic(name):
            self.stdout.write(attributes_listing(rendered[0]))
        elif rendered:
            self.stdout.write(table(rendered, COLUMNS))
        else:
            self.stderr.write(f"No topic object on broker {broker!r}" + (f" matches {name!r}." if name else "."))

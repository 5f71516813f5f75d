from django.core.management.base import BaseCommand

from brokers.management.admin_cli import attributes_listing, is_generic, json_dumps, name_matches, service_errors, table
from pubsub.api.render import subscription_render
from pubsub.selectors import subscription_get, subscription_list

COLUMNS = [
    ("NAME", "name"),
    ("TOPIC_FILTER", "topic_filter"),
    ("QUEUE", "queue"),
    ("ACTIVE", "active"),
    ("DURABLE", "durable"),
    ("ACTIVATION", "activation_topic"),
    ("DEACTIVATION", "deactivation_topic"),
]


class Command(BaseCommand):
    help = (
        "Display subscriptions. An exact NAME shows every attribute, one per line; a generic name "
        "(*, APP.*) or none shows a table."
    )

    def add_arguments(self, parser):
        parser.add_argument("broker", help="the broker")
        parser.add_argument("name", nargs="?", default=None, metavar="NAME|*", help="a subscription or a generic name")
        parser.add_argument("--json", action="store_true", help="print a JSON array")

    def handle(self, *args, broker, name, json, **options):
        with service_errors():
            if is_generic(name):
                subs = [s for s in subscription_list(broker=broker) if name_matches(name, s.name)]
            else:
                subs = [subscription_get(broker=broker, name=name)]
        rendered = [subscription_render(row) for row in subs]
        if json:
            self.stdout.write(json_dumps(rendered, indent=2))
        elif not is_generic(name):
            self.stdout.write(attributes_listing(rendered[0]))
        elif rendered:
            self.stdout.write(table(rendered, COLUMNS))
        else:
            self.stderr.write(f"No subscription on broker {broker!r}" + (f" matches {name!r}." if name else "."))

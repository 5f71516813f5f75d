from django.core.management.base import BaseCommand

from brokers.channels.render import channel_render
from brokers.management.admin_cli import attributes_listing, is_generic, json_dumps, name_matches, service_errors, table
from brokers.models import Channel
from brokers.channels.definitions import channel_get

COLUMNS = [
    ("NAME", "name"),
    ("FROM", "source_broker"),
    ("XMITQ", "transmission_queue"),
    ("TO", "target_broker"),
    ("STATE", "state"),
    ("PREEMPTIVE", "preemptive"),
    ("BATCHES", "batches_committed"),
    ("BACKED_OUT", "batches_backed_out"),
    ("IN_FLIGHT", "batches_in_flight"),
    ("MESSAGES", "messages_sent"),
    ("LAST_ERROR", "last_error"),
]


class Command(BaseCommand):
    help = "Display channels with their state and counters (an exact NAME: every attribute)."

    def add_arguments(self, parser):
        parser.add_argument("name", nargs="?", default=None, metavar="NAME|*")
        parser.add_argument("--json", action="store_true", help="print a JSON array of the channels")

    def handle(self, *args, name, json, **options):
        with service_errors():
            if is_generic(name):
                channels = [
                    c
                    for c in Channel.objects.select_related("source_broker").order_by("name")
                    if name_matches(name, c.name)
                ]
            else:
                channels = [channel_get(name=name)]
        rendered = [channel_render(c) for c in channels]
        if json:
            self.stdout.write(json_dumps(rendered, indent=2))
        elif not is_generic(name):
            self.stdout.write(attributes_listing(rendered[0]))
        elif rendered:
            self.stdout.write(table(rendered, COLUMNS))
        else:
            self.stderr.write("No channel matches." if name else "No channels defined.")

from django.core.management.base import BaseCommand

from brokers.management.admin_cli import json_dumps, service_errors, table
from pubsub.api.render import retained_render
from pubsub.selectors import retained_list


class Command(BaseCommand):
    help = "Display the retained publications whose topics match TOPIC_FILTER (default #)."

    def add_arguments(self, parser):
        parser.add_argument("broker", help="the broker")
        parser.add_argument("topic_filter", nargs="?", default="#", help="a topic filter (default #)")
        parser.add_argument("--json", action="store_true", help="print a JSON array")

    def handle(self, *args, broker, topic_filter, json, **options):
        with service_errors():
            rendered = [retained_render(row) for row in retained_list(broker=broker, topic_filter=topic_filter)]
        if json:
            self.stdout.write(json_dumps(rendered, indent=2))
        elif rendered:
            self.stdout.write(
                table(
                    rendered,
                    [("TOPIC", "topic"), ("MSG_ID", "msg_id"), ("PUBLISHED_AT", "published_at"), ("BODY", "body")],
                )
            )
        else:
            self.stderr.write(f"No retained publication on broker {broker!r} matches {topic_filter!r}.")

import sys

from django.core.management.base import BaseCommand

from brokers.management.admin_cli import service_errors
from pubsub.api.operations import PublicationPublish
from pubsub.services.publications import publication_publish


class Command(BaseCommand):
    help = (
        "Publish BODY on a topic string (BODY absent or '-': standard input, as put reads it); prints the "
        "publication's msg_id and how many subscriptions received a copy."
    )
    stealth_options = ("stdin",)

    def add_arguments(self, parser):
        parser.add_argument("broker", help="the broker")
        parser.add_argument("topic", help="the topic string (no wildcards)")
        parser.add_argument("body", nargs="?", default=None, help="the message body; '-' or absent: read stdin")
        parser.add_argument("--retain", action="store_true", help="keep it as the topic's retained publication")
        parser.add_argument("--persistence", help="persistent, non_persistent or queue_default (the default)")
        parser.add_argument("--priority", type=int, help="0-9")
        parser.add_argument(
            "--property",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            dest="properties",
            help="a user property (repeatable)",
        )

    def handle(self, *args, broker, topic, body, retain, **options):
        fields = {name: options[name] for name in ("persistence", "priority") if options.get(name) is not None}
        if options["properties"]:
            fields["properties"] = dict(p.partition("=")[::2] for p in options["properties"])
        fields["body"] = body if body not in (None, "-") else (options.get("stdin") or sys.stdin).read()
        with service_errors():
            data = PublicationPublish.parse({"broker": broker, "topic": topic, "retain": retain, **fields})
            result = publication_publish(
                broker=data.broker, topic=data.topic, message=data.to_input(), retain=data.retain
            )
        note = " (held by conflation)" if result.held else ""
        self.stdout.write(f"{result.msg_id} matched {result.matched}{' retained' if retain else ''}{note}")

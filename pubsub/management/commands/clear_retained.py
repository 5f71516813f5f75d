from django.core.management.base import BaseCommand

from brokers.management.admin_cli import service_errors
from pubsub.api.retained import RetainedClear
from pubsub.services.retained import retained_clear


class Command(BaseCommand):
    help = "Clear a topic string's retained publication."

    def add_arguments(self, parser):
        parser.add_argument("broker", help="the broker")
        parser.add_argument("topic", help="the topic string")

    def handle(self, *args, broker, topic, **options):
        with service_errors():
            data = RetainedClear.parse({"broker": broker, "topic": topic})
            cleared = retained_clear(broker=data.broker, topic=data.topic)
        if options["verbosity"] > 0:
            self.stdout.write(
                f"Retained publication of {topic!r} cleared."
                if cleared
                else f"Topic {topic!r} had no retained publication."
            )

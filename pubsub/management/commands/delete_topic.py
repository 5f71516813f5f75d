from django.core.management.base import BaseCommand

from brokers.management.admin_cli import service_errors
from pubsub.services.topics import topic_delete


class Command(BaseCommand):
    help = "Delete a topic object (its topic strings fall back to the next topic object above them)."

    def add_arguments(self, parser):
        parser.add_argument("broker", help="the broker")
        parser.add_argument("name", help="the topic object")

    def handle(self, *args, broker, name, **options):
        with service_errors():
            topic_delete(broker=broker, name=name)
        if options["verbosity"] > 0:
            self.stdout.write(f"Topic object {name!r} deleted from broker {broker!r}.")

from django.core.management.base import BaseCommand

from brokers.management.admin_cli import service_errors
from brokers.services.queues import queue_delete


class Command(BaseCommand):
    help = (
        "Delete a queue. Refused for the broker's dead-letter queue, for a queue with messages under "
        "an open unit of work, and, without --purge, for a queue that holds messages."
    )

    def add_arguments(self, parser):
        parser.add_argument("broker", help="the broker the queue belongs to")
        parser.add_argument("name", help="the queue to delete")
        parser.add_argument("--purge", action="store_true", help="discard the messages it holds")

    def handle(self, *args, broker, name, purge, **options):
        with service_errors():
            queue_delete(broker=broker, name=name, purge=purge)
        if options["verbosity"] > 0:
            self.stdout.write(f"Queue {name!r} deleted from broker {broker!r}.")

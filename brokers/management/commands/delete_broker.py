from django.core.management.base import BaseCommand

from brokers.management.admin_cli import service_errors
from brokers.services.brokers import broker_delete


class Command(BaseCommand):
    help = (
        "Delete a broker and all its queues. Refused while a unit of work on it is open, "
        "and, without --purge, while any of its queues holds messages."
    )

    def add_arguments(self, parser):
        parser.add_argument("name", help="the broker to delete")
        parser.add_argument("--purge", action="store_true", help="discard the messages on its queues")

    def handle(self, *args, name, purge, **options):
        with service_errors():
            broker_delete(name=name, purge=purge)
        if options["verbosity"] > 0:
            self.stdout.write(f"Broker {name!r} deleted.")

from django.core.management.base import BaseCommand

from brokers.management.admin_cli import service_errors
from brokers.channels.definitions import channel_delete


class Command(BaseCommand):
    help = "Delete a stopped channel with no batch in doubt."

    def add_arguments(self, parser):
        parser.add_argument("name")

    def handle(self, *args, name, **options):
        with service_errors():
            channel_delete(name=name)
        if options["verbosity"] > 0:
            self.stdout.write(f"Channel {name!r} deleted.")

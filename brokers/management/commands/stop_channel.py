from django.core.management.base import BaseCommand

from brokers.management.admin_cli import service_errors
from brokers.channels.definitions import channel_stop


class Command(BaseCommand):
    help = "Stop a channel after its current batch (a batch in doubt stays in doubt until it starts again)."

    def add_arguments(self, parser):
        parser.add_argument("name")

    def handle(self, *args, name, **options):
        with service_errors():
            channel = channel_stop(name=name)
        self.stdout.write(f"Channel {name!r} stopping (state {channel.state}).")

from django.core.management.base import BaseCommand

from brokers.management.admin_cli import service_errors
from brokers.channels.definitions import channel_start


class Command(BaseCommand):
    help = "Start a channel: the worker fleet runs its agent (at most one at a time)."

    def add_arguments(self, parser):
        parser.add_argument("name")

    def handle(self, *args, name, **options):
        with service_errors():
            channel = channel_start(name=name)
        self.stdout.write(f"Channel {name!r} started (state {channel.state}).")

from django.core.management.base import BaseCommand

from brokers.management.admin_cli import attribute_options_add, attributes_given, service_errors
from brokers.models import Channel
from brokers.api.operations.base import given
from brokers.channels.api.operations import ChannelAlter
from brokers.channels.definitions import CHANNEL_FIELDS, channel_alter


class Command(BaseCommand):
    help = "Change a stopped channel's definition."

    def add_arguments(self, parser):
        parser.add_argument("name", help="the channel to alter")
        attribute_options_add(parser, Channel, CHANNEL_FIELDS, with_defaults=False)

    def handle(self, *args, name, **options):
        with service_errors():
            data = ChannelAlter.parse({"channel": name, **attributes_given(options, CHANNEL_FIELDS)})
            channel_alter(name=data.channel, **given(data, "channel"))
        if options["verbosity"] > 0:
            self.stdout.write(f"Channel {name!r} altered.")

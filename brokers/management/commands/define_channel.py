from django.core.management.base import BaseCommand

from brokers.management.admin_cli import attribute_options_add, attributes_given, service_errors
from brokers.models import Channel
from brokers.api.operations.base import given
from brokers.channels.api.operations import ChannelDefine
from brokers.channels.definitions import CHANNEL_FIELDS, channel_define


class Command(BaseCommand):
    help = (
        "Define a channel (stopped) from a transmission queue on a broker of this platform to a target "
        "broker: on this platform, or on another one (--target-url and --target-token)."
    )

    def add_arguments(self, parser):
        parser.add_argument("name", help="the channel's name")
        attribute_options_add(parser, Channel, CHANNEL_FIELDS, with_defaults=True)

    def handle(self, *args, name, **options):
        with service_errors():
            data = ChannelDefine.parse({"name": name, **attributes_given(options, CHANNEL_FIELDS)})
            channel = channel_define(name=data.name, **given(data, "name"))
        if options["verbosity"] > 0:
            self.stdout.write(
                f"Channel {channel.name!r} defined ({channel.source_broker.name} -> {channel.target_broker})."
            )

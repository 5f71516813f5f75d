from django.core.management.base import BaseCommand

from brokers.management.admin_cli import attribute_options_add, attributes_given, service_errors
from brokers.models import Broker
from brokers.api.operations.base import given
from brokers.api.operations.definitions import BrokerDefine
from brokers.services.brokers import BROKER_FIELDS, broker_define


class Command(BaseCommand):
    help = "Define a broker (a queue manager) together with its dead-letter queue."

    def add_arguments(self, parser):
        parser.add_argument("name", help="the broker's name: 1-48 characters of A-Z a-z 0-9 . _ / %% -")
        attribute_options_add(parser, Broker, BROKER_FIELDS, with_defaults=True)

    def handle(self, *args, name, **options):
        with service_errors():
            data = BrokerDefine.parse({"name": name, **attributes_given(options, BROKER_FIELDS)})
            broker = broker_define(name=data.name, **given(data, "name"))
        if options["verbosity"] > 0:
            self.stdout.write(f"Broker {broker.name!r} defined, dead-letter queue {broker.dead_letter_queue!r}.")

from django.core.management.base import BaseCommand, CommandError

from brokers.management.admin_cli import attribute_options_add, attributes_given, service_errors
from brokers.models import Broker
from brokers.api.operations.base import given
from brokers.api.operations.definitions import BrokerAlter
from brokers.services.brokers import BROKER_FIELDS, broker_alter


class Command(BaseCommand):
    help = (
        "Change a broker's attributes; those not given keep their values. "
        "Naming a dead-letter queue that does not exist defines it."
    )

    def add_arguments(self, parser):
        parser.add_argument("name", help="the broker to alter")
        attribute_options_add(parser, Broker, BROKER_FIELDS, with_defaults=False)

    def handle(self, *args, name, **options):
        changes = attributes_given(options, BROKER_FIELDS)
        if not changes:
            raise CommandError("Nothing to alter: give at least one attribute option (see --help).")
        with service_errors():
            data = BrokerAlter.parse({"broker": name, **changes})
            broker_alter(name=data.broker, **given(data, "broker"))
        if options["verbosity"] > 0:
            self.stdout.write(f"Broker {name!r} altered: {', '.join(sorted(changes))}.")

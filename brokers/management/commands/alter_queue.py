from django.core.management.base import BaseCommand, CommandError

from brokers.management.admin_cli import attribute_options_add, attributes_given, service_errors
from brokers.models import Queue
from brokers.api.operations.base import given
from brokers.api.operations.definitions import QueueAlter
from brokers.services.queues import QUEUE_FIELDS, queue_alter


class Command(BaseCommand):
    help = "Change a queue's attributes; those not given keep their values."

    def add_arguments(self, parser):
        parser.add_argument("broker", help="the broker the queue belongs to")
        parser.add_argument("name", help="the queue to alter")
        attribute_options_add(parser, Queue, QUEUE_FIELDS, with_defaults=False)

    def handle(self, *args, broker, name, **options):
        changes = attributes_given(options, QUEUE_FIELDS)
        if not changes:
            raise CommandError("Nothing to alter: give at least one attribute option (see --help).")
        with service_errors():
            data = QueueAlter.parse({"broker": broker, "queue": name, **changes})
            queue_alter(broker=data.broker, name=data.queue, **given(data, "broker", "queue"))
        if options["verbosity"] > 0:
            self.stdout.write(f"Queue {name!r} on broker {broker!r} altered: {', '.join(sorted(changes))}.")

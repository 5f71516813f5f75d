from django.core.management.base import BaseCommand

from brokers.management.admin_cli import attribute_options_add, attributes_given, service_errors
from brokers.models import Queue
from brokers.api.operations.base import given
from brokers.api.operations.definitions import QueueDefine
from brokers.services.queues import QUEUE_FIELDS, queue_define

BROKER_DEFAULTS = {
    "max_message_length": "the broker's",
    "default_persistence": "the broker's",
    "remote_queue": "the queue's own name",
    "transmission_queue": "the remote broker's name",
}


class Command(BaseCommand):
    help = (
        "Define a queue on a broker: local (holds messages), remote (names a queue on another broker "
        "and the transmission queue leading there) or alias (another name for a queue on this broker)."
    )

    def add_arguments(self, parser):
        parser.add_argument("broker", help="the broker the queue belongs to")
        parser.add_argument("name", help="the queue's name: 1-48 characters of A-Z a-z 0-9 . _ / %% -")
        attribute_options_add(parser, Queue, QUEUE_FIELDS, with_defaults=True, defaults_note=BROKER_DEFAULTS)

    def handle(self, *args, broker, name, **options):
        with service_errors():
            data = QueueDefine.parse({"broker": broker, "name": name, **attributes_given(options, QUEUE_FIELDS)})
            queue = queue_define(broker=data.broker, name=data.name, **given(data, "broker", "name"))
        if options["verbosity"] > 0:
            self.stdout.write(f"Queue {queue.name!r} ({queue.kind}) defined on broker {broker!r}.")

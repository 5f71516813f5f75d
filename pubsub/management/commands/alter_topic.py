from django.core.management.base import BaseCommand, CommandError

from brokers.management.admin_cli import attribute_options_add, attributes_given, service_errors
from pubsub.models import Topic
from brokers.api.operations.base import given
from pubsub.api.definitions import TopicAlter
from pubsub.services.topics import TOPIC_FIELDS, topic_alter


class Command(BaseCommand):
    help = "Alter a topic object's attributes (only those given change)."

    def add_arguments(self, parser):
        parser.add_argument("broker", help="the broker")
        parser.add_argument("name", help="the topic object")
        attribute_options_add(parser, Topic, TOPIC_FIELDS, with_defaults=False)

    def handle(self, *args, broker, name, **options):
        changes = attributes_given(options, TOPIC_FIELDS)
        if not changes:
            raise CommandError("Give at least one attribute to change.")
        with service_errors():
            data = TopicAlter.parse({"broker": broker, "name": name, **changes})
            topic_alter(broker=data.broker, name=data.name, **given(data, "broker", "name"))
        if options["verbosity"] > 0:
            self.stdout.write(f"Topic object {name!r} altered on broker {broker!r}.")

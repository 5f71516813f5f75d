from django.core.management.base import BaseCommand

from brokers.management.admin_cli import attribute_options_add, attributes_given, service_errors
from pubsub.models import Topic
from brokers.api.operations.base import given
from pubsub.api.definitions import TopicDefine
from pubsub.services.topics import TOPIC_FIELDS, topic_define


class Command(BaseCommand):
    help = (
        "Define a topic object: it administers TOPIC_STRING and every topic string below it (the nearest "
        "topic object wins): conflation interval, whether durable subscriptions are allowed."
    )

    def add_arguments(self, parser):
        parser.add_argument("broker", help="the broker")
        parser.add_argument("name", help="the topic object's name: 1-48 characters of A-Z a-z 0-9 . _ / %% -")
        parser.add_argument("topic_string", help="the topic string it administers (no wildcards)")
        attribute_options_add(parser, Topic, TOPIC_FIELDS, with_defaults=True)

    def handle(self, *args, broker, name, topic_string, **options):
        with service_errors():
            data = TopicDefine.parse(
                {
                    "broker": broker,
                    "name": name,
                    "topic_string": topic_string,
                    **attributes_given(options, TOPIC_FIELDS),
                }
            )
            topic = topic_define(**given(data))
        if options["verbosity"] > 0:
            self.stdout.write(f"Topic object {topic.name!r} ({topic.topic_string!r}) defined on broker {broker!r}.")

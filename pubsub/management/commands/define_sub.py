from django.core.management.base import BaseCommand

from brokers.management.admin_cli import service_errors, yes_no
from pubsub.api.definitions import SubscriptionDefine
from pubsub.services.subscriptions import subscription_define


class Command(BaseCommand):
    help = (
        "Define a subscription: copies of the publications whose topics match TOPIC_FILTER (MQTT rules: "
        "+ one level, # the rest) go to QUEUE while it is active."
    )

    def add_arguments(self, parser):
        parser.add_argument("broker", help="the broker")
        parser.add_argument("name", help="the subscription's name")
        parser.add_argument("topic_filter", help="the topic filter, e.g. sport/+/scores or prices/#")
        parser.add_argument("queue", help="the queue its copies go to")
        parser.add_argument(
            "--durable",
            type=yes_no,
            default=True,
            metavar="yes|no",
            help="survives restarts; a full queue fails publications (default yes)",
        )
        parser.add_argument(
            "--activation-topic", default="", metavar="TOPIC", help="starts inactive; a publication here switches it on"
        )
        parser.add_argument(
            "--deactivation-topic", default="", metavar="TOPIC", help="a publication here switches it off"
        )
        parser.add_argument(
            "--new-publications-only", action="store_true", help="do not send it the retained publications"
        )

    def handle(self, *args, broker, name, topic_filter, queue, **options):
        with service_errors():
            data = SubscriptionDefine.parse(
                {
                    "broker": broker,
                    "name": name,
                    "topic_filter": topic_filter,
                    "queue": queue,
                    "durable": options["durable"],
                    "activation_topic": options["activation_topic"],
                    "deactivation_topic": options["deactivation_topic"],
                    "new_publications_only": options["new_publications_only"],
                }
            )
            sub = subscription_define(**data.model_dump())
        if options["verbosity"] > 0:
            state = "active" if sub.active else "inactive"
            self.stdout.write(
                f"Subscription {name!r} ({topic_filter!r} -> {queue}) defined on broker {broker!r}, {state}."
            )

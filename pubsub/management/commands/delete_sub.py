from django.core.management.base import BaseCommand

from brokers.management.admin_cli import service_errors
from pubsub.services.subscriptions import subscription_delete


class Command(BaseCommand):
    help = "Delete a subscription (what it delivered stays on its queue)."

    def add_arguments(self, parser):
        parser.add_argument("broker", help="the broker")
        parser.add_argument("name", help="the subscription")

    def handle(self, *args, broker, name, **options):
        with service_errors():
            subscription_delete(broker=broker, name=name)
        if options["verbosity"] > 0:
            self.stdout.write(f"Subscription {name!r} deleted from broker {broker!r}.")

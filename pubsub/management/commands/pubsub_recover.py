from django.core.management.base import BaseCommand

from pubsub.services.subscriptions import subscriptions_nondurable_remove


class Command(BaseCommand):
    help = "Restart recovery for publish/subscribe: remove non-durable subscriptions (platform/up runs it)."

    def handle(self, *args, **options):
        removed = subscriptions_nondurable_remove()
        self.stdout.write(f"recovery: {removed} non-durable subscriptions removed")

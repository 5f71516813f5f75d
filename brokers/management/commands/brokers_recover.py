from django.core.management.base import BaseCommand

from brokers.services.housekeeping import brokers_recover


class Command(BaseCommand):
    help = "Restart recovery: roll back units of work left open and discard non-persistent messages."

    def handle(self, *args, **options):
        outcome = brokers_recover()
        self.stdout.write(
            f"recovery: {outcome['rolled_back']} units of work rolled back, "
            f"{outcome['discarded']} non-persistent messages discarded"
        )

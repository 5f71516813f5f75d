from django.core.management.base import BaseCommand

from brokers.operating.housekeeping import operating_housekeep


class Command(BaseCommand):
    help = (
        "Run the operating housekeeping once, as Celery beat does every BATON_OPERATING_INTERVAL_S seconds: "
        "fold the journal into the metrics' totals, apply retention, evaluate queue events (docs/operating.md)."
    )

    def handle(self, *args, **options):
        done = operating_housekeep()
        self.stdout.write(", ".join(f"{key}: {value}" for key, value in done.items()))

"""manage.py analytics_run: export the journal's new events and analyse them now."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from analytics.models import AnalyticsRun, RunState
from analytics.services import analytics_run


class Command(BaseCommand):
    help = (
        "Run the journal analytics now, in this process (they also run on Celery beat's schedule, "
        "BATON_ANALYTICS_INTERVAL_S): export the journal's new events, analyse them with Spark, load the results."
    )

    def add_arguments(self, parser):
        parser.add_argument("--master", default=None, help="Spark master (default: BATON_SPARK_MASTER or local[*]).")

    def handle(self, *args, master, **options):
        with transaction.atomic():
            run = AnalyticsRun.objects.create()
        run = analytics_run(run_id=run.pk, master=master)
        if run.state != RunState.SUCCEEDED:
            raise CommandError(f"Analytics run {run.pk} failed: {run.error}")
        self.stdout.write(f"Analytics run {run.pk}: {run.events_exported} new journal events; results loaded.")

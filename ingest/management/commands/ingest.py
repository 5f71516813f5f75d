"""manage.py ingest BROKER QUEUE PATH: start a Spark ingest and follow it with a progress bar."""

from __future__ import annotations

import sys
import threading
import time

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from brokers.management.admin_cli import error_line
from baton_client.errors import BatonError, InvalidInput
from ingest.api import IngestStart
from ingest.models import IngestFormat, IngestState
from ingest.selectors import ingest_get
from ingest.services import ingest_run, ingest_start

BAR = 30


class Command(BaseCommand):
    help = (
        "Put the records of a file or folder of the staging directory on a queue, once each, with a Spark job "
        "on the worker fleet (or in this process with --here); shows its progress until it ends."
    )

    def add_arguments(self, parser):
        parser.add_argument("broker")
        parser.add_argument("queue")
        parser.add_argument("path", help="A file or folder, relative to the staging directory (BATON_STAGING_DIR).")
        parser.add_argument("--format", default=IngestFormat.JSONL, choices=IngestFormat.values)
        parser.add_argument("--body-field", default="")
        parser.add_argument("--key-field", default="")
        parser.add_argument("--properties-fields", default="", help="Comma-separated field names.")
        parser.add_argument(
            "--dedup-retention-days",
            type=int,
            default=7,
            help="How long the queue remembers each record's key (a rerun within it skips them).",
        )
        parser.add_argument("--user", default="admin", help="Whose permissions and API token the job uses.")
        parser.add_argument("--here", action="store_true", help="Run the job from this process, not on a worker.")
        parser.add_argument("--no-wait", action="store_true", help="Print the ingest's id and return at once.")

    def handle(
        self,
        *args,
        broker,
        queue,
        path,
        format,
        body_field,
        key_field,
        properties_fields,
        user,
        here,
        no_wait,
        dedup_retention_days,
        **options,
    ):
        try:
            owner = get_user_model().objects.get(username=user)
        except get_user_model().DoesNotExist:
            raise CommandError(f"No user {user!r} (see --user).") from None
        fields = [f for f in properties_fields.split(",") if f]
        try:
            data = IngestStart.parse(
                {
                    "broker": broker,
                    "queue": queue,
                    "source": path,
                    "format": format,
                    "body_field": body_field,
                    "key_field": key_field,
                    "properties_fields": fields,
                    "dedup_retention_days": dedup_retention_days,
                }
            )
            with transaction.atomic():
                ingest = ingest_start(user=owner, on_worker=not here, **data.model_dump())
        except InvalidInput as exc:
            raise CommandError(error_line(exc)) from None
        except BatonError as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(f"Ingest {ingest.pk} of {path} into {broker}/{queue}.")
        if no_wait:
            return
        if here:
            threading.Thread(target=ingest_run, kwargs={"ingest_id": ingest.pk}, daemon=True).start()
        ingest = self._follow(ingest.pk)
        if ingest.state == IngestState.FAILED:
            raise CommandError(f"Ingest {ingest.pk} failed: {ingest.error}")

    def _follow(self, ingest_id: str):
        tty = sys.stdout.isatty()
        last = None
        while True:
            ingest = ingest_get(ingest_id=ingest_id)
            line = _progress(ingest)
            if tty:
                self.stdout.write("\r" + line, ending="")
                self.stdout.flush()
            elif line != last:
                self.stdout.write(line)
            last = line
            if ingest.state in (IngestState.SUCCEEDED, IngestState.FAILED):
                if tty:
                    self.stdout.write("")
                return ingest
            time.sleep(0.5)  # the refresh interval of the progress bar


def _progress(ingest) -> str:
    total, done = ingest.records_total, ingest.records_done
    if total:
        filled = min(BAR, BAR * done // total)
        bar = f"[{'#' * filled}{'.' * (BAR - filled)}] {done}/{total}"
    else:
        bar = f"[{'?' * BAR}] {done}/?"
    return f"{bar} records, {ingest.messages_put} put, {ingest.duplicates_skipped} duplicates skipped ({ingest.state})"

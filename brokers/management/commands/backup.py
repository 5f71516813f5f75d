from django.core.management.base import BaseCommand, CommandError

from brokers.operating.backup import database_backup
from baton_client.errors import BatonError


class Command(BaseCommand):
    help = (
        "Write a consistent copy of the database to PATH while the platform runs (SQLite: the online backup "
        "API; PostgreSQL: pg_dump -Fc). PATH is replaced whole or left as it was (docs/operating.md)."
    )

    def add_arguments(self, parser):
        parser.add_argument("path")

    def handle(self, *args, path, **options):
        try:
            done = database_backup(path=path)
        except BatonError as exc:
            raise CommandError(exc.message) from exc
        size = f"{done['bytes']:,} bytes, {done['seconds']} s"
        self.stdout.write(f"backed up the {done['database']} database to {done['path']} ({size})")

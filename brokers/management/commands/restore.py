from django.core.management.base import BaseCommand, CommandError

from brokers.operating.backup import database_restore
from baton_client.errors import BatonError


class Command(BaseCommand):
    help = (
        "Put the backup at PATH in place of a stopped platform's database (refused while the platform runs); "
        "restart recovery runs at the next start, as after a crash (docs/operating.md)."
    )
    requires_system_checks = []  # nothing touches the database before the restore has checked it may

    def add_arguments(self, parser):
        parser.add_argument("path")

    def handle(self, *args, path, **options):
        try:
            done = database_restore(path=path)
        except BatonError as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(
            f"restored {done['path']} into the {done['database']} database ({done['seconds']} s); "
            "start the platform: restart recovery rolls back the units of work the backup caught open"
        )

import getpass
import os

from django.core.management.base import BaseCommand, CommandError

from baton_client.errors import BatonError
from dashboard.access import ROLES
from dashboard.users import dashboard_user


class Command(BaseCommand):
    help = (
        "Create or update a user who signs in to the dashboard, with a role on brokers: "
        + ", ".join(f"{r} ({'+'.join(a)})" for r, a in ROLES.items())
        + ". The password comes from "
        "BATON_USER_PASSWORD or is asked for."
    )

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--role", choices=sorted(ROLES), default=None)
        parser.add_argument("--broker", action="append", default=[], help="A broker the role applies to (repeat).")

    def handle(self, *args, username, role, broker, **options):
        password = os.environ.get("BATON_USER_PASSWORD") or getpass.getpass(f"Password for {username}: ")
        try:
            dashboard_user(username=username, password=password, role=role, brokers=broker)
        except BatonError as exc:
            raise CommandError(exc.message) from exc
        where = f" as {role or 'viewer'} on {', '.join(broker)}" if broker else ""
        self.stdout.write(f"{username} may sign in at /login/{where}.")

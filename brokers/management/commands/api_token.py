from django.core.management.base import BaseCommand, CommandError

from brokers.services.access import api_token_issue
from baton_client.errors import BatonError


class Command(BaseCommand):
    help = "Print the API token of a user (alone on a line), creating the user if asked."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--create-user", action="store_true", help="Create the user if it does not exist.")
        parser.add_argument("--superuser", action="store_true", help="Make the user a superuser (may do everything).")

    def handle(self, *args, username, create_user, superuser, **options):
        try:
            self.stdout.write(api_token_issue(username=username, create_user=create_user, superuser=superuser))
        except BatonError as exc:
            raise CommandError(exc.message) from exc

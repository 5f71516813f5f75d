from django.core.management.base import BaseCommand, CommandError

from brokers.services.access import revoke_actions
from baton_client.errors import BatonError

from .grant import add_grant_arguments, describe


class Command(BaseCommand):
    help = (
        "Take actions (put, get, browse, admin, monitor) away from a user's grant on a queue, or on the whole broker "
        "(grants on single queues are separate). Prints what the user may still do there."
    )

    def add_arguments(self, parser):
        add_grant_arguments(parser)

    def handle(self, *args, username, broker, queue, actions, **options):
        try:
            grant = revoke_actions(username=username, broker=broker, queue=queue, actions=actions)
        except BatonError as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(describe(username, broker, queue, grant.actions if grant else []))

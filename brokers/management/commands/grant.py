from django.core.management.base import BaseCommand, CommandError

from brokers.services.access import grant_actions
from baton_client.errors import BatonError


def add_grant_arguments(parser) -> None:
    parser.add_argument("username")
    parser.add_argument("--broker", required=True, help="The broker.")
    parser.add_argument(
        "--queue",
        default="",
        help="One queue of the broker; without it, the whole broker (every queue of it, and the broker itself).",
    )
    parser.add_argument(
        "--actions",
        required=True,
        help="Comma-separated: put, get, browse, admin, monitor (broker-wide: scrape /metrics).",
    )


def describe(username: str, broker: str, queue: str, actions: list[str]) -> str:
    where = f"queue {queue} of broker {broker}" if queue else f"broker {broker} (every queue)"
    return f"{username} may {', '.join(actions) if actions else 'do nothing'} on {where}"


class Command(BaseCommand):
    help = (
        "Let a user put, get, browse or administer a queue, or every queue of a broker, or monitor a broker. "
        "Adds to what the user may already do there; prints what the user may now do."
    )

    def add_arguments(self, parser):
        add_grant_arguments(parser)

    def handle(self, *args, username, broker, queue, actions, **options):
        try:
            grant = grant_actions(username=username, broker=broker, queue=queue, actions=actions)
        except BatonError as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(describe(username, broker, queue, grant.actions))

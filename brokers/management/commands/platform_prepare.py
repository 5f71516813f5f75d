from django.core.management import call_command
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = (
        "What platform/up does before it starts the servers, in one process: migrate, collectstatic, "
        "restart recovery (brokers_recover, pubsub_recover), the demo topology with --demo, and "
        "dashboard_bootstrap. The same as running each command in turn, without starting Python and "
        "Django once per command."
    )

    def add_arguments(self, parser):
        parser.add_argument("--demo", action="store_true", help="Also define the demo topology (demo_topology).")
        parser.add_argument(
            "--url", default="http://localhost:8000/login/", help="The sign-in URL dashboard_bootstrap prints."
        )

    def handle(self, *args, **options):
        call_command("migrate", interactive=False, verbosity=0)
        call_command("collectstatic", interactive=False, verbosity=0)
        call_command("brokers_recover")
        call_command("pubsub_recover")
        if options["demo"]:
            call_command("demo_topology")
        call_command("dashboard_bootstrap", url=options["url"])

from django.core.management.base import BaseCommand

from brokers.management.admin_cli import service_errors
from workflows.management.cli import message
from workflows.services.instances import instance_start


class Command(BaseCommand):
    help = "Start an instance of a workflow: its first step's request is BODY. Prints the instance's id."

    def add_arguments(self, parser):
        parser.add_argument("broker")
        parser.add_argument("name")
        parser.add_argument("body", nargs="?", default="", help="the first step's request body")

    def handle(self, *args, broker, name, body, **options):
        with service_errors():
            instance = instance_start(broker=broker, name=name, message=message(body))
        self.stdout.write(instance.pk)

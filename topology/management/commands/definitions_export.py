from django.core.management.base import BaseCommand, CommandError

from baton_client.errors import BatonError
from topology.files import document_text, document_write
from topology.selectors import definitions_export


class Command(BaseCommand):
    help = (
        "Write the definitions document (baton-definitions/1): every broker, queue, channel, topic object, "
        "subscription, workflow, user and grant, with the attributes that differ from their defaults. "
        "JSON, or YAML for a file ending in .yaml."
    )

    def add_arguments(self, parser):
        parser.add_argument("--broker", default=None, help="Only this broker's objects.")
        parser.add_argument("--all", action="store_true", help="Every attribute, defaults included.")
        parser.add_argument("-o", "--output", default=None, help="The file to write (default: standard output).")

    def handle(self, *args, broker, all, output, **options):  # noqa: A002
        try:
            document = definitions_export(broker=broker, all=all)
        except BatonError as exc:
            raise CommandError(exc.message) from exc
        if output:
            document_write(document, output)
        else:
            self.stdout.write(document_text(document), ending="")

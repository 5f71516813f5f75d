from django.core.management.base import BaseCommand

from baton_client.errors import BatonError, InvalidInput
from topology.services import definitions_plan

from ._documents import document_parsed, invalid_lines, outcome_lines


class Command(BaseCommand):
    help = (
        "Show what applying a definitions document (JSON, or YAML for .yaml) would change, and what would be "
        "refused; change nothing. Exit status 0: no changes, 2: changes, 1: refused or not valid."
    )

    def add_arguments(self, parser):
        parser.add_argument("file")
        parser.add_argument("--prune", action="store_true", help="Also delete what the document does not name.")
        parser.add_argument("--force", action="store_true", help="As apply --force.")

    def handle(self, *args, file, prune, force, **options):
        try:
            document = document_parsed(file, prune=prune, force=force)
            outcome = definitions_plan(document=document, prune=prune, force=force)
        except InvalidInput as exc:
            self.stderr.write("\n".join(invalid_lines(exc)))
            raise SystemExit(1) from None
        except BatonError as exc:
            self.stderr.write(exc.message)
            raise SystemExit(1) from None
        lines = outcome_lines(outcome)
        self.stdout.write("\n".join(lines) if lines else "No changes.")
        if outcome["refused"]:
            raise SystemExit(1)
        if outcome["changes"]:
            raise SystemExit(2)

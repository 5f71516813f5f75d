import hashlib
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand

from baton_client.errors import BatonError, DefinitionsConflict, InvalidInput
from topology.services import definitions_apply

from ._documents import document_parsed, invalid_lines, outcome_lines

#: The hash of the document the last ``--if-changed`` apply applied (platform/up's BATON_DEFINITIONS).
APPLIED = "definitions.sha256"


class Command(BaseCommand):
    help = (
        "Apply a definitions document (JSON, or YAML for .yaml): every change or none, in one database "
        "transaction. Deletes what the document does not name only with --prune; queues holding messages only "
        "with --force. Exit status 1: refused or not valid (nothing changed)."
    )

    def add_arguments(self, parser):
        parser.add_argument("file")
        parser.add_argument("--prune", action="store_true", help="Also delete what the document does not name.")
        parser.add_argument("--force", action="store_true", help="Delete queues and brokers that hold messages.")
        parser.add_argument(
            "--if-changed",
            action="store_true",
            help="Skip a file unchanged since the last apply with this option (its hash is kept in BATON_VAR_DIR).",
        )

    def handle(self, *args, file, prune, force, if_changed, **options):
        kept = Path(settings.VAR_DIR) / APPLIED
        digest = ""
        if if_changed:
            try:
                digest = hashlib.sha256(Path(file).read_bytes()).hexdigest()
            except OSError as exc:
                self.stderr.write(f"Cannot read {file}: {exc.strerror}.")
                raise SystemExit(1) from None
            if kept.is_file() and kept.read_text().strip() == digest:
                self.stdout.write(f"{file} is unchanged since it was last applied; skipped.")
                return
        try:
            document = document_parsed(file, prune=prune, force=force)
            outcome = definitions_apply(document=document, prune=prune, force=force)
        except InvalidInput as exc:
            self.stderr.write("\n".join(invalid_lines(exc)))
            raise SystemExit(1) from None
        except DefinitionsConflict as exc:
            self.stderr.write("Nothing was applied; refused:")
            self.stderr.write("\n".join(outcome_lines({"changes": [], "refused": exc.details["refused"]})))
            raise SystemExit(1) from None
        except BatonError as exc:
            self.stderr.write(exc.message)
            raise SystemExit(1) from None
        lines = outcome_lines(outcome)
        self.stdout.write("\n".join(lines) if lines else "No changes.")
        if if_changed:
            kept.parent.mkdir(parents=True, exist_ok=True)
            kept.write_text(digest + "\n")

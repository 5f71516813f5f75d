from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from brokers.api.operations.messages import MessageBrowse
from brokers.management.admin_cli import json_dumps, service_errors, table
from brokers.services.message_input import message_render
from brokers.services.messages import message_browse

COLUMNS = [
    ("MSG_ID", "msg_id"),
    ("PRIORITY", "priority"),
    ("PERSISTENCE", "persistence"),
    ("PUT_TIME", "put_time"),
    ("LENGTH", "length"),
    ("BODY", "preview"),
]
PREVIEW = 40


def _preview(data: dict) -> str:
    text = data["body"]
    if text is None:
        return "<binary>"
    text = text.encode("unicode_escape").decode("ascii") if not text.isprintable() else text
    return text if len(text) <= PREVIEW else text[: PREVIEW - 3] + "..."


class Command(BaseCommand):
    help = (
        "Look at the messages on a queue without removing them: a table (msg_id, priority, persistence, "
        "put time, length, the start of the body), or with --json each whole message as one JSON object "
        "a line. Unordered: available messages in put order; --ordered: a reliable browse in the queue's "
        "read order, in-flight and locked messages included. --body-contains and --property show only the "
        "messages they match, as REST's browse filter does."
    )

    def add_arguments(self, parser):
        parser.add_argument("broker", help="the broker")
        parser.add_argument("queue", help="the queue (local or alias)")
        parser.add_argument("--limit", type=int, default=50, metavar="N", help="show at most N messages (default 50)")
        parser.add_argument("--ordered", action="store_true", help="reliable browse in the queue's read order")
        parser.add_argument(
            "--body-contains",
            metavar="TEXT",
            help="only messages whose body holds TEXT's UTF-8 bytes (1 to 200 characters, case-sensitive)",
        )
        parser.add_argument(
            "--property",
            metavar="NAME[=VALUE]",
            help="only messages with the property NAME, or whose NAME is VALUE (compared as text)",
        )
        parser.add_argument(
            "--json", dest="as_json", action="store_true", help="print each whole message as a JSON object a line"
        )

    def handle(self, *args, broker, queue, limit, ordered, as_json, body_contains=None, property=None, **options):
        if limit < 1:
            raise CommandError("--limit must be at least 1.")
        messages, more, source = [], False, None
        cursor = None
        with service_errors():
            first_page = min(limit + 1, settings.BATON_MAX_BATCH)  # the names checked as REST checks them
            asked = {"broker": broker, "queue": queue, "ordered": ordered, "limit": first_page}
            asked.update({k: v for k, v in (("body_contains", body_contains), ("property", property)) if v is not None})
            found = MessageBrowse.parse(asked).message_filter()  # the filter too
            # Page through with the cursor; one more than asked tells whether there are more.
            while len(messages) <= limit:
                page = min(limit + 1 - len(messages), settings.BATON_MAX_BATCH)
                result = message_browse(
                    broker=broker, queue=queue, cursor=cursor, limit=page, ordered=ordered, filter=found
                )
                source, moved, cursor = result.queue, result.cursor != cursor, result.cursor
                messages += result.messages
                if not moved:  # nothing further (an ordered browse may skip expired ones and go on)
                    break
        if len(messages) > limit:
            messages, more = messages[:limit], True
        b, q = source.broker.name, source.name
        rendered = [message_render(m, broker=b, queue=q) for m in messages]
        if as_json:
            if rendered:
                self.stdout.write("\n".join(json_dumps(data) for data in rendered))
        elif rendered:
            rows = [{**data, "length": len(m.body), "preview": _preview(data)} for data, m in zip(rendered, messages)]
            self.stdout.write(table(rows, COLUMNS))
        elif found.active:
            self.stderr.write(f"No message on queue {queue!r} of broker {broker!r} matches the filter.")
        else:
            self.stderr.write(f"No messages to browse on queue {queue!r} of broker {broker!r}.")
        if more:
            self.stderr.write(f"More messages follow; raise --limit (now {limit}) to see them.")

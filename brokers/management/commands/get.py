import base64
import contextlib
import sys

from django.core.management.base import BaseCommand, CommandError

from brokers.api.operations.base import given
from brokers.api.operations.messages import MessageGet
from brokers.management.admin_cli import json_dumps, service_errors
from brokers.services.message_input import message_render
from brokers.services.messages import message_get
from transactions.manager import transaction_commit, transaction_rollback
from transactions.models import TransactionState

#: Exit codes, as grep's: 0 got at least one message, 1 none available, 2 an error.
NONE_AVAILABLE = 1
FAILED = 2


class NoMessage(CommandError):
    """No message was available (exit code 1)."""

    def __init__(self, message: str):
        super().__init__(message, returncode=NONE_AVAILABLE)


def _why(reason: str | None, *, broker: str, queue: str, wait: float) -> str:
    where = f"queue {queue!r} on broker {broker!r}"
    waited = f" after waiting {wait:g} s" if wait else ""
    text = {
        "empty": f"No message available on {where}{waited}",
        "no_match": f"No message on {where} matches the ids given{waited}",
        "next_in_order_in_flight": f"The next message in order on {where} is in flight or locked{waited}",
        "next_in_order_uncommitted": f"The next message in order on {where} is not committed yet{waited}",
    }.get(reason or "", f"No message available on {where}{waited}")
    return f"{text}. [{reason or 'empty'}]"


class Command(BaseCommand):
    help = (
        "Get (remove) messages from a queue and print them: each body as text on its own line, or with "
        "--json each whole message as one JSON object a line, or with --base64 each body in base64. "
        "Exit code 0 when it got a message, 1 when none was available (the reason on stderr), 2 on an error. "
        "The get is committed only once the output is written: if printing fails, the messages go back."
    )

    _from_shell = False

    def run_from_argv(self, argv):
        self._from_shell = True
        super().run_from_argv(argv)

    def add_arguments(self, parser):
        parser.add_argument("broker", help="the broker")
        parser.add_argument("queue", help="the queue (local or alias)")
        parser.add_argument("--wait", type=float, default=0, metavar="S", help="wait up to S seconds for a message")
        parser.add_argument("--batch", type=int, default=1, metavar="N", help="get up to N messages (default 1)")
        parser.add_argument("--correl-id", metavar="HEX48", help="only a message with this correlation id")
        parser.add_argument("--msg-id", metavar="HEX48", help="only the message with this msg_id")
        parser.add_argument("--group-id", metavar="HEX48", help="only a message with this group id")
        shape = parser.add_mutually_exclusive_group()
        shape.add_argument(
            "--json", dest="as_json", action="store_true", help="print each whole message as a JSON object a line"
        )
        shape.add_argument(
            "--base64", dest="as_base64", action="store_true", help="print each body in base64, one a line"
        )

    def handle(self, *args, broker, queue, wait, batch, correl_id, msg_id, group_id, as_json, as_base64, **options):
        request = {"broker": broker, "queue": queue, "syncpoint": "yes", "wait": wait, "batch": batch}
        ids = {"correl_id": correl_id, "msg_id": msg_id, "group_id": group_id}
        request.update((name, value) for name, value in ids.items() if value is not None)
        with service_errors(FAILED):
            data = MessageGet.parse(request)  # checked as REST checks a get
            result = message_get(broker=data.broker, queue=data.queue, **given(data, "broker", "queue"))
        if not result.messages:
            why = _why(result.reason, broker=broker, queue=queue, wait=wait)
            if self._from_shell:  # the reason alone, not dressed as an error
                self.stderr.write(why)
                sys.exit(NONE_AVAILABLE)
            raise NoMessage(why)
        txn = result.transaction_id
        try:
            lines = _lines(result, as_json=as_json, as_base64=as_base64)
            for line in lines:
                self.stdout.write(line, ending="")
            self.stdout.flush()
            with service_errors(FAILED):
                outcome = transaction_commit(transaction_id=txn)
            if outcome.state != TransactionState.COMMITTED:
                raise CommandError(f"Unit of work {txn} did not commit (state {outcome.state}).", returncode=FAILED)
        except BaseException:
            _rolled_back(txn)
            raise


def _lines(result, *, as_json: bool, as_base64: bool) -> list[str]:
    """Everything to print, made before anything is printed (so a body that cannot be shown
    leaves every message on the queue)."""
    if as_json:
        b, q = result.queue.broker.name, result.queue.name
        return [json_dumps(message_render(m, broker=b, queue=q)) + "\n" for m in result.messages]
    if as_base64:
        return [base64.b64encode(bytes(m.body)).decode("ascii") + "\n" for m in result.messages]
    lines = []
    for m in result.messages:
        try:
            text = bytes(m.body).decode("utf-8")
        except UnicodeDecodeError:
            raise CommandError(
                f"Message {m.msg_id} is not UTF-8 text; get it with --base64 or --json. "
                "It was left on the queue (its backout count is raised).",
                returncode=FAILED,
            ) from None
        lines.append(text if text.endswith("\n") else text + "\n")
    return lines


def _rolled_back(txn: str) -> None:
    with contextlib.suppress(Exception):  # if this fails, it times out and rolls back by itself
        transaction_rollback(transaction_id=txn, require_open=False)

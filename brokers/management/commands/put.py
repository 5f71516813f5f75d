import contextlib
import os
import sys
from dataclasses import replace

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from brokers.api.operations.messages import MessagePut
from baton_client.errors import MessageTooLarge
from brokers.management.admin_cli import service_errors
from brokers.services.message_input import MessageIn, MessageInput
from brokers.services.messages import message_put
from transactions.manager import transaction_commit, transaction_rollback
from transactions.models import TransactionState

APPLICATION = "manage.py put"


def _property(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise CommandError(f"--property takes key=value, not {text!r}.")
    return key, value


class Command(BaseCommand):
    help = (
        "Put a message on a queue and print its msg_id. The body is BODY, or, when BODY is absent or "
        "'-', everything read from standard input (bytes as they are). Prints one msg_id a line."
    )
    stealth_options = ("stdin",)

    def add_arguments(self, parser):
        parser.add_argument("broker", help="the broker")
        parser.add_argument("queue", help="the queue (local, alias or remote)")
        parser.add_argument("body", nargs="?", default=None, help="the message body; '-' or absent: read stdin")
        parser.add_argument("--priority", type=int, help="0-9 (default: the queue's default priority)")
        parser.add_argument("--persistence", help="persistent, non_persistent or queue_default (the default)")
        parser.add_argument("--expiry-ms", type=int, metavar="MS", help="expire the message after MS milliseconds")
        parser.add_argument("--correl-id", metavar="HEX48", help="correlation id: 48 hexadecimal characters")
        parser.add_argument("--group-id", metavar="HEX48", help="group id: 48 hexadecimal characters")
        parser.add_argument("--msg-type", help="datagram (the default), request, reply or report")
        parser.add_argument("--format", help="format or content type of the body")
        parser.add_argument("--reply-to-queue", metavar="QUEUE")
        parser.add_argument("--reply-to-broker", metavar="BROKER")
        parser.add_argument(
            "--report",
            action="append",
            default=[],
            metavar="OPTION",
            help="ask for a report: coa, cod, expiry or exception (repeatable, or comma-separated)",
        )
        parser.add_argument(
            "--property",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            dest="properties",
            help="a user property (a string value; repeatable)",
        )
        parser.add_argument("--count", type=int, default=1, metavar="N", help="put N copies (default 1)")
        parser.add_argument(
            "--syncpoint", action="store_true", help="put under one unit of work and commit it at the end"
        )

    def _body(self, body: str | None, stdin) -> bytes:
        if body is not None and body != "-":
            return os.fsencode(body)  # the argument's bytes as the shell gave them
        stream = stdin if stdin is not None else sys.stdin
        if getattr(stream, "isatty", lambda: False)():
            self.stderr.write("Reading the message body from standard input; end it with Ctrl-D.")
        # Read no more than the longest message any queue takes, and one byte to tell it is longer.
        limit = settings.BATON_MAX_MESSAGE_LENGTH
        data = stream.buffer.read(limit + 1) if hasattr(stream, "buffer") else stream.read(limit + 1)
        data = data.encode("utf-8") if isinstance(data, str) else bytes(data)
        if len(data) > limit:
            with service_errors():
                raise MessageTooLarge(
                    f"The message on standard input is longer than the {limit} bytes any queue "
                    "accepts (BATON_MAX_MESSAGE_LENGTH).",
                    max_message_length=limit,
                )
        return data

    def handle(self, *args, broker, queue, body, count, syncpoint, **options):
        if count < 1:
            raise CommandError("--count must be at least 1.")
        fields = {
            name: options[name]
            for name in (
                "priority",
                "persistence",
                "expiry_ms",
                "correl_id",
                "group_id",
                "msg_type",
                "format",
                "reply_to_queue",
                "reply_to_broker",
            )
            if options.get(name) is not None
        }
        report = [r.strip() for item in options.get("report") or [] for r in item.split(",") if r.strip()]
        if report:
            fields["report"] = report
        if options.get("properties"):
            fields["properties"] = dict(_property(p) for p in options["properties"])
        with service_errors():  # checked as REST checks a put (the body, bytes as given, is added after)
            message = MessageIn.to_input(MessagePut.parse({"broker": broker, "queue": queue, **fields}))
        message.body = self._body(body, options.get("stdin"))
        # More copies than one call takes go under one unit of work too, so all or none are put.
        chunk = settings.BATON_MAX_BATCH
        with service_errors():
            msg_ids, txn = _put(broker, queue, message, count, chunk, under_uow=syncpoint or count > chunk)
        if txn and options["verbosity"] > 1:
            self.stderr.write(f"Committed unit of work {txn}.")
        self.stdout.write("\n".join(msg_ids))


def _copies(message: MessageInput, n: int) -> list[MessageInput]:
    return [replace(message, properties=dict(message.properties)) for _ in range(n)]


def _put(broker: str, queue: str, message: MessageInput, count: int, chunk: int, *, under_uow: bool):
    """Put ``count`` copies: in one call, or in calls of ``chunk`` under one unit of work that
    is committed at the end and backed out if anything fails. Returns the msg_ids and the
    unit of work's id."""
    if not under_uow:
        result = message_put(broker=broker, queue=queue, messages=_copies(message, count), put_application=APPLICATION)
        return [m.msg_id for m in result.messages], None
    txn = None
    msg_ids: list[str] = []
    try:
        for start in range(0, count, chunk):
            result = message_put(
                broker=broker,
                queue=queue,
                messages=_copies(message, min(chunk, count - start)),
                transaction_id=txn,
                syncpoint="yes",
                put_application=APPLICATION,
            )
            txn = result.transaction_id
            msg_ids += [m.msg_id for m in result.messages]
        outcome = transaction_commit(transaction_id=txn)
        if outcome.state != TransactionState.COMMITTED:
            raise CommandError(f"Unit of work {txn} did not commit (state {outcome.state}).")
    except BaseException:
        if txn is not None:
            _rolled_back(txn)
        raise
    return msg_ids, txn


def _rolled_back(txn: str) -> None:
    """Back out a unit of work after a failure, keeping the failure as the error shown."""
    with contextlib.suppress(Exception):  # if this fails, it times out and rolls back by itself
        transaction_rollback(transaction_id=txn, require_open=False)

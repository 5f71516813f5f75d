"""``baton``: the client's command line, for a platform reached over its REST API.

The verbs a remote user needs, named as ``manage.py baton`` names them on the server::

    baton put BROKER QUEUE [BODY]        put one message (BODY absent or '-': stdin); prints its msg_id
    baton get BROKER QUEUE               get (remove) messages and print them; exit 1 when none
    baton browse BROKER QUEUE            print messages without removing them
    baton publish BROKER TOPIC [BODY]    publish on a topic; prints msg_id and matched
    baton display broker [NAME]          a broker's definition (JSON), or every broker's
    baton display queue BROKER [NAME]    a queue's definition and depths (JSON), or every queue's
    baton outbox show --outbox PATH      what waits in an outbox, and what the platform refused (JSON)
    baton outbox flush --outbox PATH     forward what waits in an outbox; prints how many are left

``put --outbox PATH``: a persistent put the platform cannot take now (down, unreachable, a
proxy's 502/503/504) is kept in the durable outbox PATH and forwarded, exactly once and in
order, by a later ``baton`` call with the same ``--outbox`` (``put`` or ``outbox flush``);
such a put prints ``queued <dedup_key>`` and exits 0.

Where and who: ``--url`` (or ``BATON_URL``, by default http://127.0.0.1:8000) and
``--token`` (or ``BATON_TOKEN``: the key ``manage.py baton token USER`` prints). Exit codes,
as grep's and ``manage.py baton get``'s: 0 done, 1 no message, 2 an error (its code and
message on stderr). Definitions, grants and the rest of administration stay with
``manage.py baton`` on the server, or :class:`baton_client.Client`.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import sys
from dataclasses import fields
from datetime import datetime
from typing import Any

from .client import Client, Message
from .errors import BatonError
from .outbox import Outbox

#: Exit codes: a message was got (or the verb done), none was available, an error.
OK, NONE_AVAILABLE, FAILED = 0, 1, 2
DEFAULT_URL = "http://127.0.0.1:8000"


def message_json(message: Message) -> dict[str, Any]:
    """A message as one JSON object: the server's fields, ``body`` as text (null when it is
    not UTF-8) and ``body_base64``."""
    data: dict[str, Any] = {}
    for f in fields(message):
        if f.name in ("_client", "extra", "body") or (f.name == "queued" and not message.queued):
            continue
        value = getattr(message, f.name)
        data[f.name] = value.isoformat() if isinstance(value, datetime) else value
    try:
        data["body"] = message.body.decode("utf-8")
    except UnicodeDecodeError:
        data["body"] = None
    data["body_base64"] = base64.b64encode(message.body).decode("ascii")
    return {**data, **message.extra}


def _print_messages(messages: list[Message], *, as_json: bool, out) -> None:
    for message in messages:
        if as_json:
            out.write(json.dumps(message_json(message), sort_keys=True) + "\n")
        else:
            out.write(message.body.decode("utf-8", errors="replace") + "\n")


def _body(text: str | None) -> str | bytes:
    """The body given, or stdin's bytes (absent or '-')."""
    if text is None or text == "-":
        return sys.stdin.buffer.read()
    return text


def _properties(pairs: list[str]) -> dict[str, str]:
    properties = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise argparse.ArgumentTypeError(f"--property takes NAME=VALUE, not {pair!r}")
        properties[name] = value
    return properties


def _descriptor(args: argparse.Namespace) -> dict[str, Any]:
    found = {
        "priority": args.priority,
        "persistence": args.persistence,
        "expiry_ms": args.expiry_ms,
        "correl_id": args.correl_id,
    }
    if args.property:
        found["properties"] = _properties(args.property)
    return {name: value for name, value in found.items() if value is not None}


# --- the verbs ---------------------------------------------------------------------------


def put(client: Client, args: argparse.Namespace, out) -> int:
    message = client.put(args.broker, args.queue, _body(args.body), **_descriptor(args))
    if message.queued:
        out.write(f"queued {message.extra['dedup_key']}\n")
        sys.stderr.write(
            f"baton: the platform could not be reached; the message was kept in the outbox {args.outbox} "
            f"({client.outbox.depth} waiting): a later baton call with --outbox {args.outbox} forwards it.\n"
        )
        return OK
    out.write(message.msg_id + "\n")
    if client.outbox is not None and client.outbox.depth:
        client.outbox.flush(timeout=0)  # the platform answers: one round for what other queues keep
    return OK


def outbox(client: Client | None, args: argparse.Namespace, out) -> int:
    """``outbox show``: depth, bytes and the failed messages (JSON); ``outbox flush``:
    forward, print how many are left (exit 1 when some are)."""
    if args.action == "show":
        with Outbox(args.outbox, forward_thread=False) as box:
            failed = [{k: v for k, v in vars(f).items() if k != "extra"} for f in box.failed]
            shown = {"path": box.path, "depth": box.depth, "bytes": box.size, "failed": failed}
        out.write(json.dumps(shown, indent=2, sort_keys=True) + "\n")
        return OK
    assert client is not None and client.outbox is not None
    left = client.outbox.flush(timeout=args.wait)
    out.write(f"{left}\n")
    if left:
        error = client.outbox.last_error
        why = f" ({error})" if error else ""
        sys.stderr.write(f"baton: {left} messages still wait in {args.outbox}{why}\n")
        return NONE_AVAILABLE
    return OK


def get(client: Client, args: argparse.Namespace, out) -> int:
    batch = client.get(args.broker, args.queue, wait=args.wait, batch=args.batch)
    if not batch:
        waited = f" after waiting {args.wait:g} s" if args.wait else ""
        sys.stderr.write(
            f"No message available on queue {args.queue!r} of broker {args.broker!r}{waited}. "
            f"[{batch.reason or 'empty'}]\n"
        )
        return NONE_AVAILABLE
    _print_messages(list(batch), as_json=args.json, out=out)
    return OK


def browse(client: Client, args: argparse.Namespace, out) -> int:
    messages, _ = client.browse_page(args.broker, args.queue, limit=args.limit)
    _print_messages(messages, as_json=args.json, out=out)
    return OK


def publish(client: Client, args: argparse.Namespace, out) -> int:
    answer = client.publish(args.broker, args.topic, _body(args.body), retain=args.retain, **_descriptor(args))
    out.write(f"{answer['msg_id']} matched {answer['matched']}\n")
    return OK


def display(client: Client, args: argparse.Namespace, out) -> int:
    if args.object == "broker":
        found = client.display_broker(args.name) if args.name else client.list_brokers()
    else:
        if not args.broker:
            raise SystemExit("baton display queue: give the broker")
        found = client.display_queue(args.broker, args.name) if args.name else client.list_queues(args.broker)
    out.write(json.dumps(found, indent=2, sort_keys=True) + "\n")
    return OK


# --- the parser --------------------------------------------------------------------------


def _message_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--priority", type=int, help="0-9 (default: the queue's default priority)")
    parser.add_argument("--persistence", help="persistent, non_persistent or queue_default (the default)")
    parser.add_argument("--expiry-ms", type=int, metavar="MS", help="expire the message after MS milliseconds")
    parser.add_argument("--correl-id", metavar="HEX48", help="correlation id: 48 hexadecimal characters")
    parser.add_argument(
        "--property", action="append", default=[], metavar="NAME=VALUE", help="a message property (repeatable)"
    )


#: How this command's verbs relate to ``manage.py baton``'s (the help says it; a test checks
#: that the shared verbs take the same positional arguments).
SHARED_VERBS = ("put", "get", "browse", "publish", "display")
VOCABULARY = """BATON_URL and BATON_TOKEN stand in for --url and --token.

Two commands are called baton. This one (installed with the client) works over the REST
API from anywhere; `manage.py baton` runs on the server, against its database. They share
verbs and their arguments for what both do: put, get, browse and publish take BROKER
QUEUE|TOPIC [BODY] (BODY absent or '-': stdin), display takes broker [NAME] or queue BROKER
[NAME], with --json. Only here: put --outbox and outbox. Only on the server: define, alter,
delete, start, stop, grant, revoke, token, user and the rest of administration (`manage.py
baton help` lists them), and the selectors get --correl-id/--msg-id/--group-id/--base64 and
browse --ordered/--body-contains/--property."""


def parser_make() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="baton",
        description="Baton's client command line: put, get, browse and publish over the REST API.",
        epilog=VOCABULARY,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--url", default=os.environ.get("BATON_URL", DEFAULT_URL), help="the platform's address")
    parser.add_argument("--token", default=os.environ.get("BATON_TOKEN"), help="an API token")
    parser.add_argument("--timeout", type=float, default=30, metavar="S", help="seconds to wait for an answer")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")

    p = verbs.add_parser("put", help="put one message on a queue; prints its msg_id")
    p.add_argument("broker")
    p.add_argument("queue")
    p.add_argument("body", nargs="?", help="the body; absent or '-': stdin")
    _message_options(p)
    _outbox_option(p, required=False)
    p.set_defaults(run=put)

    p = verbs.add_parser("get", help="get (remove) messages from a queue; exit 1 when none")
    p.add_argument("broker")
    p.add_argument("queue")
    p.add_argument("--wait", type=float, default=0, metavar="S", help="wait up to S seconds for a message")
    p.add_argument("--batch", type=int, default=1, metavar="N", help="get up to N messages (default 1)")
    p.add_argument("--json", action="store_true", help="print each whole message as a JSON object a line")
    p.set_defaults(run=get)

    p = verbs.add_parser("browse", help="print a queue's messages without removing them")
    p.add_argument("broker")
    p.add_argument("queue")
    p.add_argument("--limit", type=int, default=50, metavar="N", help="at most N messages (default 50)")
    p.add_argument("--json", action="store_true", help="print each whole message as a JSON object a line")
    p.set_defaults(run=browse)

    p = verbs.add_parser("publish", help="publish on a topic; prints msg_id and the subscriptions matched")
    p.add_argument("broker")
    p.add_argument("topic")
    p.add_argument("body", nargs="?", help="the body; absent or '-': stdin")
    p.add_argument("--retain", action="store_true", help="keep it as the topic's retained publication")
    _message_options(p)
    p.set_defaults(run=publish)

    p = verbs.add_parser("display", help="display brokers or queues (JSON)")
    p.add_argument("object", choices=["broker", "queue"])
    p.add_argument("broker", nargs="?", help="display broker: the broker (none: every broker)")
    p.add_argument("name", nargs="?", help="display queue: the queue (none: every queue)")
    p.add_argument("--json", action="store_true", help="JSON (always, here; as manage.py baton display --json)")
    p.set_defaults(run=display)

    p = verbs.add_parser("outbox", help="show or flush a durable outbox (see put --outbox)")
    p.add_argument("action", choices=["show", "flush"])
    _outbox_option(p, required=True)
    p.add_argument(
        "--wait", type=float, default=30, metavar="S", help="flush: keep trying up to S seconds (default 30)"
    )
    p.set_defaults(run=outbox)
    return parser


def _outbox_option(parser: argparse.ArgumentParser, *, required: bool) -> None:
    parser.add_argument(
        "--outbox",
        required=required,
        metavar="PATH",
        help="a durable outbox (SQLite file): a persistent put the platform cannot take now is kept there and "
        "forwarded, exactly once, by a later baton call with the same --outbox",
    )


def main(argv: list[str] | None = None) -> int:
    args = parser_make().parse_args(argv)
    if args.verb == "display" and args.object == "broker":
        args.name = args.broker  # display broker [NAME]
    try:
        if args.verb == "outbox" and args.action == "show":
            return outbox(None, args, sys.stdout)  # the file only: no platform
        path = getattr(args, "outbox", None)
        with Client(args.url, args.token, timeout=args.timeout, transport="rest", outbox=path) as client:
            return args.run(client, args, sys.stdout)
    except argparse.ArgumentTypeError as exc:
        sys.stderr.write(f"baton: {exc}\n")
        return FAILED
    except BatonError as exc:
        sys.stderr.write(f"baton: {exc.code}: {exc}\n")
        return FAILED


if __name__ == "__main__":
    sys.exit(main())

"""The verbs of ``manage.py baton`` (as runmqsc or rabbitmqadmin name them: a verb, then
what it acts on) and the command each runs. The commands' own names (``define_queue``...)
stay as aliases: ``manage.py baton define queue BRK1 Q1`` is ``manage.py define_queue BRK1
Q1``."""

from __future__ import annotations

#: (verb, object or "") -> (the command, what it does). An empty object: the verb alone.
VERBS: dict[tuple[str, str], tuple[str, str]] = {
    **{
        (verb, obj): (f"{verb}_{obj}", f"{verb} a {noun}")
        for verb in ("define", "alter", "display", "delete")
        for obj, noun in (("broker", "broker"), ("queue", "queue"), ("channel", "channel"), ("topic", "topic object"))
    },
    ("define", "sub"): ("define_sub", "define a subscription"),
    ("display", "sub"): ("display_sub", "display subscriptions"),
    ("delete", "sub"): ("delete_sub", "delete a subscription"),
    ("display", "retained"): ("display_retained", "display retained publications"),
    ("clear", "retained"): ("clear_retained", "clear a topic's retained publication"),
    ("start", "channel"): ("start_channel", "start a channel's agent on the worker fleet"),
    ("stop", "channel"): ("stop_channel", "stop a channel's agent"),
    ("run", "channel"): ("channel_run", "run a channel's agent in the foreground"),
    ("put", ""): ("put", "put messages on a queue"),
    ("get", ""): ("get", "get messages from a queue (exit status 1 when none)"),
    ("browse", ""): ("browse", "browse a queue"),
    ("publish", ""): ("publish", "publish on a topic"),
    ("grant", ""): ("grant", "grant a user actions on a broker or queue"),
    ("revoke", ""): ("revoke", "revoke what grant gave"),
    ("token", ""): ("api_token", "print a user's API token"),
    ("user", ""): ("dashboard_user", "add or change a dashboard user"),
    ("ingest", ""): ("ingest", "ingest a file into a queue with Spark"),
    ("run", "analytics"): ("analytics_run", "run the analytics now"),
    ("export", "journal"): ("journal_export", "export the journal"),
    ("recover", "brokers"): ("brokers_recover", "restart recovery of units of work and messages"),
    ("recover", "pubsub"): ("pubsub_recover", "restart recovery of publish/subscribe"),
    ("define", "demo"): ("demo_topology", "define the demo topology"),
    # definitions as code (topology/)
    ("definitions", "export"): ("definitions_export", "write the definitions document"),
    ("definitions", "plan"): ("definitions_plan", "show what a definitions document would change"),
    ("definitions", "apply"): ("definitions_apply", "apply a definitions document, all or nothing"),
    ("housekeep", ""): ("housekeep", "run the operating housekeeping once (metrics' totals, retention)"),
    ("backup", ""): ("backup", "write a consistent copy of the database while the platform runs"),
    ("restore", ""): ("restore", "put a backup in place of a stopped platform's database"),
}


def verb_resolve(words: list[str]) -> tuple[str, list[str]] | None:
    """The command and its arguments for ``baton <verb> [<object>] args...``; None when the
    words name no verb."""
    if not words:
        return None
    verb = words[0].lower()
    if len(words) > 1 and (verb, words[1].lower()) in VERBS:
        return VERBS[(verb, words[1].lower())][0], words[2:]
    if (verb, "") in VERBS:
        return VERBS[(verb, "")][0], words[1:]
    return None


def verbs_text() -> str:
    rows = [(f"{verb} {obj}".strip(), command, what) for (verb, obj), (command, what) in VERBS.items()]
    width = max(len(row[0]) for row in rows)
    lines = [
        "manage.py baton <verb> [<object>] [arguments]   (each verb runs the command named beside it;",
        "the command's own name works too; `manage.py baton <verb> [<object>] --help` shows its options)",
        "",
    ]
    lines += [f"  {words:<{width}}  {command:<17} {what}" for words, command, what in sorted(rows)]
    lines += ["", *CLIENT_NOTE.splitlines()]
    return "\n".join(lines)


#: How these verbs relate to the client's ``baton`` console script (tests/commands checks the
#: shared verbs' positional arguments agree).
CLIENT_NOTE = """The client's `baton` command (installed with baton-client, over the REST API from anywhere)
shares these verbs and their arguments: put, get, browse, publish (BROKER QUEUE|TOPIC [BODY],
BODY absent or '-': stdin) and display broker [NAME] / display queue BROKER [NAME] (--json).
It adds put --outbox and outbox; everything else here is server administration."""

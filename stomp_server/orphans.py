"""The queues of non-durable STOMP topic subscriptions (``stomp.<hash>``) whose connection's
process is gone: a process that dies (killed, crashed) cannot remove them itself. The STOMP
server removes them (with their subscription and what they hold) when it starts.

Each such queue's description names the process that defined it (``host:pid``); a process
of this host that no longer runs left it behind. Processes of other hosts are not judged
(``manage.py pubsub_recover`` at a platform restart removes their subscriptions)."""

from __future__ import annotations

import logging
import os
import re
import socket

from brokers.models import Queue

from . import engine

log = logging.getLogger(__name__)
#: The queue name of a non-durable STOMP topic subscription (durable ones are stomp.d.<hash>).
NON_DURABLE = re.compile(r"^stomp\.[0-9a-f]{32}$")
#: engine.topic_subscribed's description of one: ``STOMP subscription of {host}:{pid} to {filter}``.
_OWNER = re.compile(r"^STOMP subscription of (?P<host>[^ ]+):(?P<pid>\d+) to ")


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # someone else's: alive
        return False
    return False


def stomp_orphans_removed() -> int:
    """Remove the non-durable STOMP subscriptions (queue and subscription) left by processes
    of this host that are gone; how many."""
    host = socket.gethostname()
    removed = 0
    candidates = Queue.objects.filter(name__startswith="stomp.").exclude(name__startswith="stomp.d.")
    for broker, name, description in candidates.values_list("broker__name", "name", "description"):
        owner = _OWNER.match(description or "")
        if not NON_DURABLE.match(name) or owner is None or owner["host"] != host or not _gone(int(owner["pid"])):
            continue
        engine.topic_unsubscribed(broker=broker, name=name)
        removed += 1
    if removed:
        log.info("removed %d STOMP subscription(s) left by processes that are gone", removed)
    return removed

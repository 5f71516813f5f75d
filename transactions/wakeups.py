"""Wake-ups for callers that wait (gets that wait, held commits, ready-checks).

A waiter records the version of a key ("queue:<id>", "txn:<id>"), tries its operation,
and if that found nothing sleeps until the key's version changes or a poll interval ends.
Changes made in this process wake waiters at once (notified on commit); changes made by
other processes (a Celery worker, another web process) are seen at the next poll, whose
interval grows from 20 ms to half a second, so a waiting caller never polls the database
at full speed.
"""
from __future__ import annotations

import threading
import time
from collections import defaultdict
from typing import Callable, Iterable, TypeVar

from django.db import transaction

T = TypeVar("T")

_condition = threading.Condition()
_versions: dict[str, int] = defaultdict(int)

POLL_FIRST_S = 0.02
POLL_MAX_S = 0.5


def wakeup_notify(keys: Iterable[str]) -> None:
    with _condition:
        for key in keys:
            _versions[key] += 1
        _condition.notify_all()


def wakeup_notify_on_commit(keys: Iterable[str]) -> None:
    """Wake waiters on these keys once the caller's database transaction commits."""
    keys = list(keys)
    if keys:
        transaction.on_commit(lambda: wakeup_notify(keys))


def wait_for(attempt: Callable[[], T], *, keys: list[str], wait_s: float) -> T:
    """Call ``attempt`` until it returns something truthy or ``wait_s`` seconds pass;
    return its last result. ``attempt`` runs outside any database transaction."""
    deadline = time.monotonic() + max(wait_s, 0.0)
    poll = POLL_FIRST_S
    while True:
        with _condition:
            seen = [_versions[k] for k in keys]
        result = attempt()
        remaining = deadline - time.monotonic()
        if result or remaining <= 0:
            return result
        with _condition:
            _condition.wait_for(
                lambda: [_versions[k] for k in keys] != seen, timeout=min(poll, remaining)
            )
        poll = min(poll * 2, POLL_MAX_S)

"""Waiting requests: a get that found nothing, a held commit, a pending check, each with a
``wait``. Both transports try such a request at once and, only if it must wait, take one of
its user's wait slots for the wait (``BATON_MAX_WAITS_PER_USER`` in this process, REST and
sessions together). Over the limit the request is answered 429 ``throttled`` with a
Retry-After: one user's waits can never hold every thread that serves the others (the
HTTP threads, the sessions' waiter pool).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Callable

from django.conf import settings

from baton_client.errors import Throttled
from transactions.wakeups import wait_begun, wait_dropped, wait_resumed

#: Session operation name -> whether its immediate try's answer means it must wait.
WOULD_WAIT: dict[str, Callable[[int, dict[str, Any]], bool]] = {
    "get": lambda status, body: status == 200 and not body.get("messages"),
    "commit": lambda status, body: status == 202,
    "check": lambda status, body: status == 200 and body.get("result") == "pending",
}
#: Operations whose wait is ``transactions.wakeups.wait_for`` on their first look's keys: the
#: look made at once begins the wait (``wait_begun``), and the wait goes on from it without
#: looking again unless something was committed since (``wait_resumed``).
LOOKS_ONCE = frozenset({"get"})
#: Seconds a throttled client is asked to wait before trying again.
RETRY_AFTER_S = 1

_lock = threading.Lock()
_waiting: dict[Any, int] = {}


def _key(user) -> Any:
    return getattr(user, "pk", None) or id(user)


def wait_slot_take(user) -> Any:
    """Take one of the user's wait slots, or raise 429 ``throttled``. Returns the key to give back."""
    key = _key(user)
    limit = settings.BATON_MAX_WAITS_PER_USER
    with _lock:
        if _waiting.get(key, 0) >= limit:
            raise Throttled(
                f"At most {limit} waiting requests per user; try again when one is answered.",
                retry_after=RETRY_AFTER_S,
                max_waits=limit,
            )
        _waiting[key] = _waiting.get(key, 0) + 1
    return key


def wait_slot_give(key: Any) -> None:
    with _lock:
        left = _waiting.get(key, 0) - 1
        if left > 0:
            _waiting[key] = left
        else:
            _waiting.pop(key, None)


@contextmanager
def wait_slot(user) -> Iterator[None]:
    key = wait_slot_take(user)
    try:
        yield
    finally:
        wait_slot_give(key)


def waiting_now(user) -> int:
    """How many of the user's requests wait now (for tests and diagnostics)."""
    with _lock:
        return _waiting.get(_key(user), 0)


def performed(operation, user, data) -> tuple[int, dict[str, Any]]:
    """Perform ``operation`` as REST does: a request that would wait is tried at once first,
    then waits in one of its user's wait slots."""
    wait = getattr(data, "wait", 0) or 0
    if operation.session not in WOULD_WAIT or wait <= 0:
        return operation.perform(user, data)
    if operation.session in LOOKS_ONCE:
        with wait_begun() as begun:
            status, body = operation.perform(user, data)
        if not WOULD_WAIT[operation.session](status, body):
            wait_dropped(begun)
            return status, body
        with wait_resumed(begun), wait_slot(user):
            return operation.perform(user, data)
    data.wait = 0
    status, body = operation.perform(user, data)
    if not WOULD_WAIT[operation.session](status, body):
        return status, body
    data.wait = wait
    with wait_slot(user):
        return operation.perform(user, data)

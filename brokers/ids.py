"""The one generator of message ids, correlation ids and connection ids.

An id is 24 bytes: 8 bytes of wall-clock nanoseconds, 8 random bytes fixed per process,
and an 8-byte counter. Two ids from this generator never clash, so an application may use
its connection id as a correlation id knowing it can never equal a system-made id.

A connection id (``id_unguessable``) must also not be guessed from another id: after the
clock's 8 bytes come 16 random bytes, the counter's high bit set. A process's counter
starts at 0 and never reaches 2**63, so such an id still never equals one of ``id_new``.
"""

from __future__ import annotations

import os
import threading
import time

_lock = threading.Lock()
_state: dict = {"pid": None, "node": "", "next": 0}
_STAMP_MASK = (1 << 64) - 1  # 8 bytes of nanoseconds (they last until 2554)


def id_new() -> str:
    """A fresh 24-byte id as 48 lowercase hex characters."""
    node, count = _counters_taken(1)
    return "%016x%s%016x" % (time.time_ns() & _STAMP_MASK, node, count)


def id_unguessable() -> str:
    """A fresh 24-byte id (48 hex characters) of this space that nobody can derive from
    the ids they have seen: 127 random bits after the clock."""
    random = int.from_bytes(os.urandom(16), "big") | (1 << 63)
    return "%016x%032x" % (time.time_ns() & _STAMP_MASK, random)


def ids_new(n: int) -> list[str]:
    """``n`` fresh ids: one clock reading and one turn of the lock for all of them (they
    differ in their counters, in order)."""
    node, first = _counters_taken(n)
    stamp = "%016x%s" % (time.time_ns() & _STAMP_MASK, node)
    return [stamp + "%016x" % count for count in range(first, first + n)]


def _counters_taken(n: int) -> tuple[str, int]:
    """This process's node (as hex) and the first of ``n`` counters taken for it."""
    with _lock:
        if _state["pid"] != os.getpid():  # a forked worker must not repeat its parent's ids
            _state.update(pid=os.getpid(), node=os.urandom(8).hex(), next=0)
        first = _state["next"]
        _state["next"] = first + n
        return _state["node"], first

"""The one generator of message ids, correlation ids and connection ids.

An id is 24 bytes: 8 bytes of wall-clock nanoseconds, 8 random bytes fixed per process,
and an 8-byte counter. Two ids from this generator never clash, so an application may use
its connection id as a correlation id knowing it can never equal a system-made id.
"""

from __future__ import annotations

import itertools
import os
import threading
import time

_lock = threading.Lock()
_state: dict = {"pid": None, "node": b"", "counter": itertools.count()}


def id_new() -> str:
    """A fresh 24-byte id as 48 lowercase hex characters."""
    with _lock:
        if _state["pid"] != os.getpid():  # a forked worker must not repeat its parent's ids
            _state.update(pid=os.getpid(), node=os.urandom(8), counter=itertools.count())
        count = next(_state["counter"])
        node = _state["node"]
    return (time.time_ns().to_bytes(8, "big") + node + count.to_bytes(8, "big")).hex()


def ids_new(n: int) -> list[str]:
    return [id_new() for _ in range(n)]

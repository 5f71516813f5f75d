"""The threads of the STOMP connections of a process: at most ``BATON_STOMP_THREADS`` of them,
shared by every connection and subscription, which hold none while they wait (docs/stomp.md,
"How it is served"). They make the blocking engine calls (database work): a connection's
frames in order (its pump, ``brokers/api/pump.py``), a subscription's gets when it is woken."""

from __future__ import annotations

import threading

from django.conf import settings

from brokers.api.pump import Pool

_pool: Pool | None = None
_pool_lock = threading.Lock()


def stomp_pool() -> Pool:
    """This process's pool (made on first use)."""
    global _pool
    if _pool is None:
        with _pool_lock:
            if _pool is None:
                _pool = Pool("stomp", lambda: settings.BATON_STOMP_THREADS)
    return _pool

"""Cross-process wake-ups of waiting callers (docs/concurrency.md, "Waiting").

``BATON_WAKEUPS`` picks how a commit in one process wakes the gets, held commits and
ready-checks waiting in the others: ``auto`` (the default) takes Redis publish/subscribe
when ``BATON_REDIS_URL`` is set, else PostgreSQL ``LISTEN/NOTIFY`` on PostgreSQL, else
local datagram sockets under ``var/wakeups`` beside the SQLite file; ``redis``,
``postgres`` and ``sockets`` force one; ``poll`` turns them off (waiters re-check at
intervals growing from 20 ms to half a second)."""

from django.core.exceptions import ImproperlyConfigured

from .env import env_str

BATON_WAKEUPS = env_str("BATON_WAKEUPS", "auto").strip().lower()
if BATON_WAKEUPS not in {"auto", "redis", "postgres", "sockets", "poll"}:
    raise ImproperlyConfigured(f"BATON_WAKEUPS must be auto, redis, postgres, sockets or poll, not {BATON_WAKEUPS!r}.")
#: Redis for wake-ups; by default the channel layer's.
BATON_WAKEUP_REDIS_URL = env_str("BATON_WAKEUP_REDIS_URL", "") or env_str("BATON_REDIS_URL", "")

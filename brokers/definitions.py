"""Definitions (brokers and queues) cached per process, never stale.

Brokers and queue definitions change rarely and are read by every put and get. Each
process keeps the ones it has read, tagged with the definitions version
(``DefinitionsVersion``, changed by database triggers in the same database transaction as
any change to a broker, a queue's definition or a grant, by any process). An operation
reads the version inside its own database transaction — in the statement it runs first
anyway (``queries.get_start`` for a get, with its unit of work's row) — and drops the cache when it
differs, so a change committed before the operation began is always seen.

What a cached queue must not be trusted for: its counters (``reserved_depth``,
``next_commit_seq``) and its exclusive-input lease, which change on every operation and
are read fresh by the statements that use them.
"""

from __future__ import annotations

import threading

from transactions.queries import default_db

from . import queries
from .exceptions import BrokerNotFound, QueueNotFound
from .models import Broker, Queue

_lock = threading.Lock()
_cache: dict = {"key": None, "queues": {}, "brokers": {}}


def _current(version: int | None) -> dict:
    key = None if version is None else (default_db().settings_dict["NAME"], version)
    with _lock:
        if key is None or _cache["key"] != key:
            _cache.update(key=key, queues={}, brokers={})
        return _cache


def definitions_checked(version: int | None = None) -> bool:
    """Compare the definitions version (read now unless the caller has read it in its own
    statement) with the cache's, and drop the cache if they differ; True if they were the
    same. Call inside the operation's database transaction, before looking anything up."""
    if version is None:
        version = queries.definitions_version()
    if version is None:  # no version row (a flushed database): trust nothing cached
        _current(None)
        return False
    if _cache["key"] == (default_db().settings_dict["NAME"], version):
        return True
    _current(version)
    return False


def definitions_trusted() -> int | None:
    """The version the cache holds for this database, or None when it holds none: an
    operation may look things up in it before reading the version, provided it compares
    the version it then reads in its own database transaction (PostgreSQL: ``baton_put_v1``,
    ``baton_get_v1``, ``baton_definitions_check_v1``) before anything it did is kept, and
    before an error it raises on the strength of the cache (``definitions_checked``)."""
    key = _cache["key"]
    if key is None or key[0] != default_db().settings_dict["NAME"]:
        return None
    return key[1]


def queue_cached(*, broker: str, name: str) -> Queue:
    """A queue definition with its broker, from the cache checked by the caller's last
    ``definitions_checked`` (or read now and kept)."""
    cache = _cache
    queue = cache["queues"].get((broker, name))
    if queue is None:
        try:
            queue = Queue.objects.select_related("broker").get(broker__name=broker, name=name)
        except Queue.DoesNotExist as exc:
            broker_cached(name=broker)  # a missing broker is the better error
            raise QueueNotFound(f"No queue {name!r} on broker {broker!r}.", broker=broker, queue=name) from exc
        cache["queues"][(broker, name)] = queue
    return queue


def broker_cached(*, name: str) -> Broker:
    cache = _cache
    found = cache["brokers"].get(name)
    if found is None:
        try:
            found = Broker.objects.get(name=name)
        except Broker.DoesNotExist as exc:
            raise BrokerNotFound(f"No broker named {name!r}.", broker=name) from exc
        cache["brokers"][name] = found
    return found

"""The link-graph lock (PostgreSQL only).

Linking two transactions (a pre-emptive get of an uncommitted message) must not interleave
with the upstream's commit or rollback, or a rollback could miss a consumer that linked
itself a moment earlier. On PostgreSQL every commit and rollback therefore takes a
transaction-scoped advisory lock: shared when the transaction has no links (so unlinked
units of work commit in parallel), exclusive when it has links; a pre-emptive get that
takes an uncommitted message takes it exclusively. Lock order: the graph lock, then
transaction rows, then queue rows, then message rows.

On SQLite, IMMEDIATE transactions already serialise every writer; nothing is taken.
"""

from __future__ import annotations

from django.db import connection

from .queries import LINK_GRAPH_LOCK_KEY, postgres

__all__ = ["LINK_GRAPH_LOCK_KEY", "link_graph_lock", "link_graph_locking"]


def link_graph_locking() -> bool:
    return postgres()


def link_graph_lock(*, exclusive: bool) -> None:
    """Take the link-graph lock until the current database transaction ends.
    Caller holds an open database transaction and no transaction, queue or message rows."""
    if not link_graph_locking():
        return
    function = "pg_advisory_xact_lock" if exclusive else "pg_advisory_xact_lock_shared"
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {function}(%s)", [LINK_GRAPH_LOCK_KEY])
